import pino, { type Logger } from 'pino';

export type { Logger };

/** The process logger (JSON lines on stdout). Secrets never reach it: see `redact`. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie', '*.password', '*.token'], censor: '[redacted]' },
  });
}
