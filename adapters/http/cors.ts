import cors from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** What a browser-based MCP client may send and read (the Model Context Protocol's and OAuth's headers). */
const OPEN = {
  origin: '*',
  methods: ['GET', 'POST', 'DELETE'],
  allowedHeaders: [
    'authorization',
    'content-type',
    'accept',
    'mcp-protocol-version',
    'mcp-session-id',
    'last-event-id',
  ],
  exposedHeaders: ['www-authenticate', 'mcp-session-id', 'mcp-protocol-version', 'x-request-id', 'retry-after'],
  maxAge: 600,
};

/**
 * Lets pages of any origin call the routes of `app`'s scope whose path `open` takes (CORS with @fastify/cors, its
 * preflights answered before any authentication), so that a browser-based MCP client can discover, register, get
 * tokens and call the tools. Safe for any origin: these routes take bearer tokens and form fields, never a cookie,
 * so no page gets anything its own script could not send. Other paths get no CORS header, and their preflights
 * are 404. Register it before the scope's own hooks.
 */
export async function openToBrowsers(app: FastifyInstance, open: (path: string) => boolean): Promise<void> {
  await app.register(cors, {
    hideOptionsRoute: true,
    delegator: (req: FastifyRequest, done: (err: Error | null, options: object) => void) =>
      done(null, open(req.url.split('?')[0]) ? OPEN : { origin: false }),
  });
}
