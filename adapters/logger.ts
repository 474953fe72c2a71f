import { createRequire } from 'node:module';
import pino, { type DestinationStream, type Logger } from 'pino';
import type PinoPretty from 'pino-pretty';

export type { Logger };

/** How log lines look: `pretty` (pino-pretty) on a terminal unless forced, JSON lines everywhere else. */
export type LogFormat = 'auto' | 'json' | 'pretty';

/**
 * The process logger on stdout: JSON lines, or readable ones with `pretty` (and with `auto` when stdout is
 * a terminal). Secrets never reach it: see `redact`.
 */
export function createLogger(level: string, format: LogFormat | string = 'auto'): Logger {
  const options = {
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', '*.password', '*.token'],
      censor: '[redacted]',
    },
  };
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  return pretty ? pino(options, prettyStream()) : pino(options);
}

/** pino-pretty in this thread, writing synchronously (a line logged before an exit is not lost); loaded only here. */
function prettyStream(): DestinationStream {
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  return pretty.build({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
}
