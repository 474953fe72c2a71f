import {
  Agent,
  type ClientRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { createProxyServer } from 'http-proxy-3';
import { HoistError } from '../../core/errors.js';
import { badGatewayPage } from './pages.js';

/** How the edge tells a release who asked: the client's scheme when the edge cannot see it itself. */
export interface ForwardingOptions {
  /** Trust the X-Forwarded-* headers a reverse proxy in front of the edge sends (config trustProxy). */
  trustProxy: boolean;
  /** The scheme of project URLs (config appsScheme): with https, TLS ends in front of the edge. */
  appsScheme: 'http' | 'https';
}

// Headers through which a client could tell an app who it is or how it came; the edge says it itself.
const CLIENT_CLAIMS = [
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-port',
  'x-real-ip',
];

/**
 * Sets X-Forwarded-For, -Host, -Proto and -Port on a request before it goes to a release. Without
 * trustProxy every such header the client sent (and Forwarded, X-Real-IP) is replaced: For is the
 * peer's address, Host the Host header the edge routed on, Proto https when TLS ends at or in front
 * of the edge. With trustProxy the proxy's values are kept and the peer (that proxy) is appended to
 * X-Forwarded-For.
 */
export function setForwardedHeaders(req: IncomingMessage, options: ForwardingOptions): void {
  const h = req.headers;
  const peer = req.socket.remoteAddress ?? '';
  const proto = options.appsScheme === 'https' || (req.socket as TLSSocket).encrypted ? 'https' : 'http';
  const own = { host: h.host ?? '', proto, port: portOf(h.host, proto) };
  if (options.trustProxy) {
    h['x-forwarded-for'] = h['x-forwarded-for'] ? `${h['x-forwarded-for']}, ${peer}` : peer;
    h['x-forwarded-host'] ||= own.host;
    h['x-forwarded-proto'] ||= own.proto;
    h['x-forwarded-port'] ||= own.port;
    return;
  }
  for (const name of CLIENT_CLAIMS) delete h[name];
  Object.assign(h, {
    'x-forwarded-for': peer,
    'x-forwarded-host': own.host,
    'x-forwarded-proto': own.proto,
    'x-forwarded-port': own.port,
  } satisfies IncomingHttpHeaders);
}

/** The port of a Host header, else the scheme's default. */
const portOf = (host: string | undefined, proto: string) =>
  /:(\d+)$/.exec(host ?? '')?.[1] ?? (proto === 'https' ? '443' : '80');

/**
 * Forwards HTTP requests and WebSocket upgrades to a Node.js release, with the X-Forwarded-* headers
 * the edge sets itself (setForwardedHeaders). A release that does not answer gets a 502 page.
 */
export function createReleaseProxy(options: ForwardingOptions) {
  // xfwd off: http-proxy would keep a client's X-Forwarded-Host and append to its other claims.
  // The agent keeps connections to releases open between requests (without one, http-proxy opens one
  // per request and closes it). Its pool is per release address, so a connection carries one release's
  // traffic only; a dead release's sockets error out of it.
  const agent = new Agent({ keepAlive: true, scheduling: 'lifo' });
  const proxy = createProxyServer({ xfwd: false, ws: true, proxyTimeout: 120_000, agent });
  // The request to the release, so a request cut on the edge's side is ended there too.
  const outgoing = new WeakMap<IncomingMessage, ClientRequest>();
  proxy.on('proxyReq', (proxyReq: ClientRequest, req: IncomingMessage) => outgoing.set(req, proxyReq));
  const fail = (res: ServerResponse | Duplex, req: IncomingMessage, err?: unknown) => {
    if (!('writeHead' in res)) return res.destroy();
    // A body that came too slowly (slow-clients.ts): 408, and the release's request is dropped.
    if (err instanceof HoistError && err.code === 'request_timeout') {
      outgoing.get(req)?.destroy();
      if (!res.headersSent)
        res.writeHead(408, {
          'content-type': 'text/plain; charset=utf-8',
          'cache-control': 'no-store',
          connection: 'close',
        });
      return res.end(`${err.message}\n`);
    }
    if (!res.headersSent)
      res.writeHead(502, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(badGatewayPage());
  };
  return {
    /** Forwards one HTTP request to `target` (a base URL such as http://127.0.0.1:4123). */
    web(req: IncomingMessage, res: ServerResponse, target: string, headers: Record<string, string>) {
      for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
      setForwardedHeaders(req, options);
      proxy.web(req, res, { target }, (err) => fail(res, req, err));
    },
    /** Forwards a WebSocket upgrade to `target`. */
    ws(req: IncomingMessage, socket: Duplex, head: Buffer, target: string) {
      setForwardedHeaders(req, options);
      proxy.ws(req, socket, head, { target: target.replace(/^http/, 'ws') }, () => socket.destroy());
    },
  };
}
