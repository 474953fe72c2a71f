import type { FastifyRequest } from 'fastify';

/** `url` with the secret token of an upload URL (`/upload-sessions/<token>/...`) or a deploy hook's replaced. */
export const redactUrl = (url: string): string =>
  url
    .replace(/(\/upload-sessions\/)[^/?#]+/g, '$1[redacted]')
    .replace(/^(\/api(?:\/v1)?\/deploy-hooks\/)[^/?#]+/, '$1[redacted]');

/** The request as the request log lines show it (fastify's default fields), with upload URL tokens redacted. */
export function requestLog(req: FastifyRequest) {
  return {
    method: req.method,
    url: redactUrl(req.url ?? ''),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}
