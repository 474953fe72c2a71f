import {
  Agent,
  request,
  type ClientRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
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

/** How long a release may take to answer (and between the parts of its answer) before the edge gives up: 502. */
const PROXY_TIMEOUT_MS = 120_000;

/** host and port of a release's base URL (http://127.0.0.1:4123), parsed once per address. */
const addresses = new Map<string, { hostname: string; port: number }>();
function addressOf(target: string) {
  let found = addresses.get(target);
  if (!found) {
    const url = new URL(target);
    found = { hostname: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 80) };
    if (addresses.size >= 10_000) addresses.clear();
    addresses.set(target, found);
  }
  return found;
}

/** The path a release is asked for: the request's path and query in their normal form, as http-proxy asks it. */
function pathOf(url: string): string {
  const u = new URL(url.startsWith('//') ? `http://base.invalid${url}` : url, 'http://base.invalid');
  return u.pathname + u.search;
}

/**
 * Forwards HTTP requests and WebSocket upgrades to a Node.js release, with the X-Forwarded-* headers
 * the edge sets itself (setForwardedHeaders). A release that does not answer gets a 502 page.
 * `plain` forwards a request without a body over node:http alone (the edge's hot path); `web` takes
 * any request through http-proxy. Both keep their connections to releases open between requests
 * and follow the same header rules.
 */
export function createReleaseProxy(options: ForwardingOptions) {
  // xfwd off: http-proxy would keep a client's X-Forwarded-Host and append to its other claims.
  // The agent keeps connections to releases open between requests (without one, http-proxy opens one
  // per request and closes it). Its pool is per release address, so a connection carries one release's
  // traffic only; a dead release's sockets error out of it.
  const agent = new Agent({ keepAlive: true, scheduling: 'lifo' });
  const proxy = createProxyServer({ xfwd: false, ws: true, proxyTimeout: PROXY_TIMEOUT_MS, agent });
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
    /**
     * Forwards a GET or HEAD without a body (no Content-Length, Transfer-Encoding or Upgrade: the caller
     * checks) to `target` and pipes the answer back, as `web` does: the client's headers but Trailer,
     * with the edge's X-Forwarded-*; the release's status and headers but Transfer-Encoding, over the
     * edge's `headers`, with Connection as the client asked (keep-alive by default); 502 when the
     * release fails or stays silent for PROXY_TIMEOUT_MS.
     */
    plain(req: IncomingMessage, res: ServerResponse, target: string, headers: OutgoingHttpHeaders) {
      setForwardedHeaders(req, options);
      const asked = req.headers;
      const { trailer: _trailer, ...forwarded } = asked;
      const { hostname, port } = addressOf(target);
      const out = request({
        hostname,
        port,
        method: req.method,
        path: pathOf(req.url ?? '/'),
        headers: forwarded,
        agent,
      });
      out.setTimeout(PROXY_TIMEOUT_MS, () => out.destroy());
      res.once('close', () => {
        if (!res.writableFinished) out.destroy();
      });
      out.on('error', (err: NodeJS.ErrnoException) => {
        if (req.socket.destroyed && err.code === 'ECONNRESET') return;
        fail(res, req, err);
      });
      out.on('response', (answer) => {
        const got = answer.headers;
        delete got['transfer-encoding'];
        if (req.httpVersion === '1.0') got.connection = asked.connection || 'close';
        else if (!got.connection) got.connection = asked.connection || 'keep-alive';
        for (const name in headers) res.setHeader(name, headers[name]!);
        for (const name in got) if (got[name] !== undefined) res.setHeader(name, got[name]);
        res.statusCode = answer.statusCode!;
        if (answer.statusMessage) res.statusMessage = answer.statusMessage;
        answer.pipe(res);
      });
      out.end();
    },
    /** Forwards a WebSocket upgrade to `target`. */
    ws(req: IncomingMessage, socket: Duplex, head: Buffer, target: string) {
      setForwardedHeaders(req, options);
      proxy.ws(req, socket, head, { target: target.replace(/^http/, 'ws') }, () => socket.destroy());
    },
  };
}
