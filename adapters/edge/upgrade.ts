import { request, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ReleaseTarget } from '../../core/ports/deployer.js';
import { answerHeaders } from './answer-headers.js';

/** Where an upgrade goes and how its answer is told: the release, its path, the edge's own headers. */
export interface UpgradeRoute {
  target: Extract<ReleaseTarget, { kind: 'http' }>;
  /** The path and query the release is asked for (in their normal form). */
  path: string;
  /** The edge's headers on the 101 answer (answerHeaders). */
  own: OutgoingHttpHeaders;
  /** The domain project hosts are under: no release sets a cookie for it (tenantCookie). */
  appsDomain: string;
  /** How long the release may take to answer the upgrade: then the client gets 502. */
  timeoutMs: number;
}

/**
 * Answers a client's raw connection (an upgrade's, whose parser is gone) with `status` and a short text `body`, then
 * closes it once written.
 */
export function answerRaw(socket: Duplex, status: string, body: string): void {
  if (socket.destroyed || !socket.writable) return void socket.destroy();
  socket.end(
    `HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Cache-Control: no-store\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}

/** How long one side of a WebSocket may stay open once the other ended it: then both are destroyed. */
const HALF_CLOSED_MS = 5000;

/** Headers of the client's upgrade never forwarded: it has no body, and hop-by-hop ones are the edge's own. */
const UNSENT = new Set(['content-length', 'transfer-encoding', 'trailer', 'te', 'keep-alive', 'proxy-connection']);

/** A connection's settings once upgraded, as http-proxy set them: no idle timeout, no Nagle delay, TCP keep-alive. */
function settle(socket: Duplex): void {
  const s = socket as Partial<Socket>;
  s.setTimeout?.(0);
  s.setNoDelay?.(true);
  s.setKeepAlive?.(true, 0);
}

/**
 * Forwards a WebSocket upgrade (a GET with `Upgrade: websocket`; any other upgrade is closed, and one with a body is
 * 400) to its release on a connection of its own, with the request's headers (the caller sets X-Forwarded-*) but
 * UNSENT. A 101 answer reaches the client with its headers filtered as any answer's (answerHeaders: the edge's own
 * headers, no cookie for other tenants, no instruction to a proxy in front), then the two connections are piped both
 * ways, with backpressure. Any other answer, an error or silence for `timeoutMs` gets the client a 502 and both
 * connections closed: a release's body never reaches the client. An error or a close on either connection destroys
 * both; one side ending it ends the other, and both go HALF_CLOSED_MS later unless closed before.
 */
export function forwardUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, route: UpgradeRoute): void {
  // The client left while the private gate checked its cookie.
  if (socket.destroyed) return;
  if (req.method !== 'GET' || req.headers.upgrade?.toLowerCase() !== 'websocket') return void socket.destroy();
  if (req.headers['transfer-encoding'] || Number(req.headers['content-length'] ?? 0) !== 0)
    return answerRaw(socket, '400 Bad Request', 'Bad request: a WebSocket upgrade has no body.\n');
  const { url, socket: socketPath } = route.target;
  const address = new URL(url);
  const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !UNSENT.has(name)));
  const ask = request({
    ...(socketPath ? { socketPath } : { hostname: address.hostname.replace(/^\[(.*)\]$/, '$1'), port: address.port }),
    method: 'GET',
    path: route.path,
    headers,
    agent: false,
  });
  let released: Socket | undefined;
  const destroyAll = () => {
    socket.destroy();
    released?.destroy();
    ask.destroy();
  };
  const refuse = () => {
    // Once upgraded, the connections are the client's and the app's: only their own errors end them.
    if (released) return;
    ask.destroy();
    answerRaw(socket, '502 Bad Gateway', 'Bad gateway: the app did not accept the WebSocket connection.\n');
  };
  socket.on('error', destroyAll);
  socket.once('close', destroyAll);
  ask.setTimeout(route.timeoutMs, refuse);
  ask.on('error', refuse);
  ask.on('response', (answer) => {
    answer.destroy();
    refuse();
  });
  ask.on('upgrade', (answer: IncomingMessage, upstream: Socket, upstreamHead: Buffer) => {
    released = upstream;
    upstream.on('error', destroyAll);
    if (socket.destroyed) return destroyAll();
    settle(socket);
    settle(upstream);
    const lines = answerHeaders(answer.rawHeaders, route.own, req, route.appsDomain);
    let text = 'HTTP/1.1 101 Switching Protocols\r\n';
    for (let i = 0; i < lines.length; i += 2) text += `${lines[i]}: ${lines[i + 1]}\r\n`;
    socket.write(Buffer.from(`${text}\r\n`, 'latin1'));
    if (upstreamHead.length) socket.write(upstreamHead);
    if (head.length) upstream.write(head);
    upstream.once('close', destroyAll);
    // pipe ends the other side when one ends; an app (or client) that never closes its own is cut after a while.
    let cut: NodeJS.Timeout | undefined;
    const ended = () => (cut ??= setTimeout(destroyAll, HALF_CLOSED_MS).unref());
    socket.once('end', ended);
    upstream.once('end', ended);
    upstream.pipe(socket).pipe(upstream);
  });
  ask.end();
}
