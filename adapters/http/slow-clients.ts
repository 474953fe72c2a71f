import { addressKey } from '../../core/auth/address-key.js';
import type { FastifyInstance } from 'fastify';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { HoistConfig } from '../../config/schema.js';
import { HoistError } from '../../core/errors.js';
import { requestId } from './request-id.js';

/**
 * Defences of the API and the edge against clients that hold connections without sending: a
 * headers timeout, a minimum body rate, keep-alive and whole-request timeouts, and a cap on the
 * connections of one address. Each role answers in its own form: the error body for the API,
 * plain text for the edge.
 */
export type AnswerForm = 'json' | 'text';

/**
 * Fastify's trustProxy for config.trustProxy: the one proxy in front, not every hop. The address that proxy saw (the
 * last X-Forwarded-For entry) is the client's; what a client wrote before it is not believed, so a client cannot
 * choose the address its requests are counted and limited under.
 */
export const trustedHops = (config: HoistConfig) =>
  config.trustProxy ? (_address: string, hop: number) => hop === 0 : false;

/** The server options (fastify's) that carry the timeouts of `config`. */
export function serverTimeouts(config: HoistConfig) {
  // Node swaps a headersTimeout longer than requestTimeout in for it, and checks both only every
  // connectionsCheckingInterval.
  const headersTimeout = Math.min(config.headersTimeoutMs, config.requestTimeoutMs);
  return {
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs ?? (config.trustProxy ? 72_000 : 5_000),
    http: { headersTimeout, connectionsCheckingInterval: Math.max(25, Math.min(1000, Math.floor(headersTimeout / 4))) },
  };
}

/** An HTTP answer written straight to a socket (for clients no route has seen), closing the connection. */
function rawAnswer(
  status: number,
  reason: string,
  form: AnswerForm,
  code: string,
  message: string,
  extra: Record<string, string | number> = {},
): string {
  const body =
    form === 'json'
      ? JSON.stringify({
          error: { code, message, request_id: requestId(), details: extra },
        })
      : `${message}\n`;
  const type = form === 'json' ? 'application/json; charset=utf-8' : 'text/plain; charset=utf-8';
  const retry = status === 429 ? 'Retry-After: 1\r\n' : '';
  return (
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: ${type}\r\nContent-Length: ` +
    `${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\n${retry}Connection: ` +
    `close\r\n\r\n${body}`
  );
}

/**
 * Ends a socket after `answer`, reading (and dropping) what the client still sends for a moment so it gets to read the
 * answer.
 */
function endWith(socket: Socket, answer: string): void {
  socket.on('error', () => {});
  socket.end(answer);
  socket.resume();
  setTimeout(() => socket.destroy(), 1000).unref();
}

/**
 * fastify's clientErrorHandler: answers what Node refuses before any route sees it (headers or the
 * whole request past their timeout: 408 request_timeout; headers too large: 431; malformed: 400) in
 * the role's form, unless an answer is already under way on the socket (as Node does).
 */
export function clientErrorHandler(config: HoistConfig, form: AnswerForm) {
  const { http, requestTimeout } = serverTimeouts(config);
  return function (this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket) {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const [status, reason, code, message] =
      err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [
            408,
            'Request Timeout',
            'request_timeout',
            `The request did not arrive in time: its headers must arrive within ` +
              `${http.headersTimeout / 1000} s of connecting, the whole request within ` +
              `${requestTimeout / 1000} s`,
          ]
        : err.code === 'HPE_HEADER_OVERFLOW'
          ? [431, 'Request Header Fields Too Large', 'invalid_request', 'The request headers are too large']
          : [400, 'Bad Request', 'invalid_request', 'The request is not valid HTTP/1.1'];
    this.log.debug({ err: { code: err.code, message: err.message } }, 'client error');
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (socket.writable && !inFlight?.headersSent) endWith(socket, rawAnswer(status, reason, form, code, message));
    else socket.destroy();
  };
}

/**
 * Caps the connections one client address (addressKey) holds open on `server` at `max`: a
 * connection past it gets 429 rate_limited and is closed before any of it is parsed. Connections
 * are counted from accept to close, whatever they do (idle kept-alive ones and upgrades too).
 * Nothing is capped when `max` is 0.
 */
export function capConnectionsPerAddress(server: Server, max: number, form: AnswerForm): void {
  if (max <= 0) return;
  const open = new Map<string, number>();
  // Node's own 'connection' listener hands the socket to the HTTP parser: only admitted ones reach it.
  const listeners = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    const key = addressKey(socket.remoteAddress);
    const n = open.get(key) ?? 0;
    if (n >= max) {
      const message =
        `Too many open connections from your address: at most ${max} at once. Reuse or ` +
        `close the ones you hold, then try again`;
      return endWith(socket, rawAnswer(429, 'Too Many Requests', form, 'rate_limited', message, { limit: max }));
    }
    open.set(key, n + 1);
    socket.once('close', () => {
      const left = (open.get(key) ?? 1) - 1;
      if (left > 0) open.set(key, left);
      else open.delete(key);
    });
    for (const listener of listeners) listener.call(server, socket);
  });
}

const SLOW = Symbol('hoist.slowBody');

/** The request_timeout error of a request whose body came too slowly, once the body-rate guard cut it. */
export function slowBodyError(req: IncomingMessage): HoistError | undefined {
  return (req as IncomingMessage & { [SLOW]?: HoistError })[SLOW];
}

const hasBody = (req: IncomingMessage) =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/**
 * Watches the bodies of requests: one that arrives slower than `minBytesPerSecond`, averaged over
 * windows of `windowMs`, is cut. Bytes are counted as they come off the socket; a window in which
 * the reader (Hoist, or the app the edge forwards to) is behind, so that bytes wait to be read,
 * starts again rather than blaming the client. A cut request gets its error as an 'error' event
 * when something reads it (which answers it: 408 request_timeout), else `answer` sends one; either
 * way the rest of the body is not read and the connection closes.
 */
export function bodyRateGuard(
  minBytesPerSecond: number,
  windowMs: number,
  answer: (req: IncomingMessage, res: ServerResponse, err: HoistError) => void,
) {
  const watched = new Map<IncomingMessage, { res: ServerResponse; since: number; base: number }>();
  const tickMs = Math.max(20, Math.min(1000, Math.floor(windowMs / 10)));
  let timer: NodeJS.Timeout | null = null;

  const cut = (req: IncomingMessage, res: ServerResponse, got: number, elapsed: number) => {
    const secs = Math.round(elapsed / 100) / 10;
    const err = new HoistError(
      'request_timeout',
      `The request body came too slowly: ${got} bytes in the last ${secs} s, below the ` +
        `minimum of ${minBytesPerSecond} bytes/s averaged over ${windowMs / 1000} s. ` +
        'Send it faster; over a slow link, send a large archive in pieces through a ' +
        'resumable upload session (direct_storage_resumable)',
      { min_bytes_per_second: minBytesPerSecond, window_seconds: windowMs / 1000, received_bytes: got },
    );
    (req as IncomingMessage & { [SLOW]?: HoistError })[SLOW] = err;
    const socket = req.socket;
    res.once('finish', () => socket.end());
    setTimeout(() => socket.destroy(), 1000).unref();
    if (req.listenerCount('error') > 0) req.emit('error', err);
    else answer(req, res, err);
  };

  const tick = () => {
    const now = Date.now();
    for (const [req, w] of watched) {
      const socket = req.socket;
      if (req.complete || req.destroyed || !socket || socket.destroyed) {
        watched.delete(req);
        continue;
      }
      // Bytes wait for the reader (or it paused the socket): the client is not the slow one.
      if (req.readableLength > 0 || socket.isPaused()) {
        w.since = now;
        w.base = socket.bytesRead;
        continue;
      }
      const elapsed = now - w.since;
      if (elapsed < windowMs) continue;
      const got = socket.bytesRead - w.base;
      if (got * 1000 < minBytesPerSecond * elapsed) {
        watched.delete(req);
        cut(req, w.res, got, elapsed);
        continue;
      }
      w.since = now;
      w.base = socket.bytesRead;
    }
    if (!watched.size && timer) {
      clearInterval(timer);
      timer = null;
    }
  };

  return {
    /** Watches the body of `req` (answered by `res`), if it has one and came over a socket (not app.inject). */
    watch(req: IncomingMessage, res: ServerResponse): void {
      if (
        minBytesPerSecond <= 0 ||
        !hasBody(req) ||
        typeof req.socket?.bytesRead !== 'number' ||
        typeof req.socket.isPaused !== 'function'
      )
        return;
      watched.set(req, { res, since: Date.now(), base: req.socket.bytesRead });
      timer ??= setInterval(tick, tickMs).unref();
    },
  };
}

/**
 * Applies the connection cap, the client error answers and the body-rate guard to a fastify app
 * (build it with `serverTimeouts`); `answer` sends a cut body's 408 when nothing reads the body.
 */
export function guardSlowClients(
  app: FastifyInstance,
  config: HoistConfig,
  form: AnswerForm,
  answer: (req: IncomingMessage, res: ServerResponse, err: HoistError) => void,
): void {
  if (!config.trustProxy) capConnectionsPerAddress(app.server, config.maxConnectionsPerAddress, form);
  const guard = bodyRateGuard(config.minBodyBytesPerSecond, config.bodyRateWindowMs, answer);
  app.addHook('onRequest', (req, reply, done) => {
    guard.watch(req.raw, reply.raw);
    done();
  });
}
