import {
  type ClientRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { createProxyServer } from 'http-proxy-3';
import { Pool, type Dispatcher } from 'undici';
import { HoistError } from '../../core/errors.js';
import type { ReleaseTarget } from '../../core/ports/deployer.js';
import { clearsCookies, isProxyInstruction } from '../../core/ports/site-rules.cjs';
import { answerHeaders, EDGE_WINS, reasonPhrase } from './answer-headers.js';
import { tenantCookie } from './edge-cookies.js';
import { badGatewayPage } from './pages.js';
import { ReleaseAgent } from './release-agent.js';
import { forwardUpgrade } from './upgrade.js';

/** How the edge tells a release who asked: the client's scheme when the edge cannot see it itself. */
export interface ForwardingOptions {
  /** Trust the X-Forwarded-* headers a reverse proxy in front of the edge sends (config trustProxy). */
  trustProxy: boolean;
  /** The scheme of project URLs (config appsScheme): with https, TLS ends in front of the edge. */
  appsScheme: 'http' | 'https';
  /** The domain project hosts are under (config appsDomain): no release sets a cookie for it (tenantCookie). */
  appsDomain: string;
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

/** A release the edge proxies to: its address, and its unix socket on this host when it has one (used instead). */
type HttpTarget = Extract<ReleaseTarget, { kind: 'http' }>;

/**
 * A pool of kept connections per release address (http://127.0.0.1:4123, or its socket): a connection carries one
 * release's traffic.
 */
const pools = new Map<string, Pool>();
function poolOf({ url, socket }: HttpTarget): Pool {
  let pool = pools.get(socket ?? url);
  if (!pool) {
    // Addresses of releases long gone: their pools end once their requests have.
    if (pools.size >= 10_000) {
      for (const old of pools.values()) void old.close();
      pools.clear();
    }
    pool = new Pool(url, { headersTimeout: PROXY_TIMEOUT_MS, bodyTimeout: PROXY_TIMEOUT_MS, socketPath: socket });
    pools.set(socket ?? url, pool);
  }
  return pool;
}

// Request headers undici writes itself or refuses: Connection as the client asked it (close) is passed on apart.
const UNSENT = new Set(['trailer', 'connection', 'keep-alive', 'expect']);

// Segments of characters URL leaves as they are, none of them a dot segment (even percent-encoded), and a query
// without a quote or fragment: such a path is already in its normal form.
const NORMAL_PATH = /^(?:\/(?!\.|%2e|\/)[\w\-.~!$&'()*+,;=:@%]*)+(?:\?[\w\-.~!$&()*+,;=:@%/?]+)?$/i;

/** The path a release is asked for: the request's path and query in their normal form, as http-proxy asks it. */
function pathOf(url: string): string {
  if (NORMAL_PATH.test(url)) return url;
  const u = new URL(url.startsWith('//') ? `http://base.invalid${url}` : url, 'http://base.invalid');
  return u.pathname + u.search;
}

/** Cuts the client's connection when the release's is cut before its answer ends: its client sees it, not a hang. */
function cutWith(answer: IncomingMessage, res: ServerResponse): void {
  answer.once('error', () => res.destroy());
}

/** What http-proxy is given as a release's target: its socket when it has one, else its address. */
const proxyTarget = ({ url, socket }: HttpTarget) =>
  socket ? { protocol: 'http:', host: 'localhost', port: 80, socketPath: socket } : url;

/**
 * Forwards HTTP requests and WebSocket upgrades to a Node.js release (through its unix socket when it has one),
 * with the X-Forwarded-* headers the edge sets itself (setForwardedHeaders). A release that does not answer gets a
 * 502 page. `plain` forwards a request without a body through an undici Pool per release address (the edge's hot
 * path: less CPU per request than node:http's client, see bench/edge-proxy.ts); `web` takes any request through
 * http-proxy. Both keep their connections to releases open between requests and follow the same header rules, as
 * `ws` does for a WebSocket's 101 answer (forwardUpgrade, on node:http: any other answer to an upgrade is a 502).
 */
export function createReleaseProxy(options: ForwardingOptions) {
  // xfwd off: http-proxy would keep a client's X-Forwarded-Host and append to its other claims.
  // The agent keeps connections to releases open between requests (without one, http-proxy opens one
  // per request and closes it). Its pool is per release address, so a connection carries one release's
  // traffic only; a dead release's sockets error out of it. It skips the empty write that ends a request whose body
  // is still going out (skipEmptyWrites): on a unix socket the release closed after answering, that failed it.
  const agent = new ReleaseAgent();
  const proxy = createProxyServer({ xfwd: false, proxyTimeout: PROXY_TIMEOUT_MS, agent });
  // The request to the release, so a request cut on the edge's side is ended there too.
  const outgoing = new WeakMap<IncomingMessage, ClientRequest>();
  proxy.on('proxyReq', (proxyReq: ClientRequest, req: IncomingMessage, res: ServerResponse) => {
    outgoing.set(req, proxyReq);
    // A 101 to a request that asked no upgrade (only `ws` forwards those): node:http would hold it unanswered.
    proxyReq.once('upgrade', (_answer: IncomingMessage, socket: Duplex) => {
      socket.destroy();
      fail(res, req);
    });
  });
  proxy.on('proxyRes', (answer: IncomingMessage, _req: IncomingMessage, res: ServerResponse) => {
    // http-proxy writes the answer's status and headers after this event, from answer's: a phrase writeHead would
    // throw on (a control character) is left out.
    answer.statusMessage = reasonPhrase(answer.statusMessage);
    for (const name of Object.keys(answer.headers)) if (isProxyInstruction(name)) delete answer.headers[name];
    if (res.hasHeader(EDGE_WINS)) delete answer.headers[EDGE_WINS];
    const cookies = answer.headers['set-cookie'];
    if (cookies) answer.headers['set-cookie'] = cookies.filter((c) => tenantCookie(c, options.appsDomain));
    const clear = answer.headers['clear-site-data'];
    if (clear && clearsCookies(String(clear))) delete answer.headers['clear-site-data'];
    cutWith(answer, res);
  });
  const fail = (res: ServerResponse, req: IncomingMessage, err?: unknown) => {
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
  // Errors go to each request's callback; without a listener here, one that does not would be thrown (http-proxy).
  proxy.on('error', (err, req, res) => {
    if (res && 'headersSent' in res && !res.headersSent) fail(res, req, err);
    else res?.destroy();
  });
  return {
    /** Forwards one HTTP request to `target`. */
    web(req: IncomingMessage, res: ServerResponse, target: HttpTarget, headers: Record<string, string>) {
      for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
      setForwardedHeaders(req, options);
      proxy.web(req, res, { target: proxyTarget(target) }, (err) => fail(res, req, err));
    },
    /**
     * Forwards a GET or HEAD without a body (no Content-Length, Transfer-Encoding or Upgrade: the caller
     * checks) to `target` and streams the answer back, as `web` does: the client's headers but Trailer,
     * Keep-Alive and Expect, with the edge's X-Forwarded-*; the release's status and headers but
     * Transfer-Encoding, over the edge's `headers`, with Connection as the client asked (keep-alive by
     * default); 502 when the release fails or stays silent for PROXY_TIMEOUT_MS; the client's connection
     * cut when the release's is cut mid-answer.
     */
    plain(req: IncomingMessage, res: ServerResponse, target: HttpTarget, headers: OutgoingHttpHeaders) {
      setForwardedHeaders(req, options);
      const asked = req.headers;
      const forwarded: string[] = [];
      for (const name in asked) if (!UNSENT.has(name)) forwarded.push(name, asked[name] as string);
      if (asked.connection?.toLowerCase() === 'close') forwarded.push('connection', 'close');
      let abort: ((err?: Error) => void) | undefined;
      res.once('close', () => {
        if (!res.writableFinished) abort?.();
      });
      const handler: Dispatcher.DispatchHandlers = {
        onConnect: (cancel) => (abort = cancel),
        onHeaders: (status, raw, resume, statusText) => {
          // An informational answer (103 Early Hints...) is not passed on: the final one follows.
          if (status < 200) return true;
          const reason = reasonPhrase(statusText) || undefined;
          res.writeHead(status, reason, answerHeaders(raw, headers, req, options.appsDomain));
          res.on('drain', resume);
          return true;
        },
        onData: (chunk) => res.write(chunk),
        onComplete: () => res.end(),
        onError: (err) => {
          if (res.destroyed) return;
          if (res.headersSent) res.destroy();
          else fail(res, req, err);
        },
      };
      const path = pathOf(req.url ?? '/');
      poolOf(target).dispatch({ path, method: req.method as 'GET', headers: forwarded }, handler);
    },
    /** Forwards a WebSocket upgrade to `target` (forwardUpgrade); its 101 answer carries the edge's `headers`. */
    ws(req: IncomingMessage, socket: Duplex, head: Buffer, target: HttpTarget, headers: OutgoingHttpHeaders) {
      setForwardedHeaders(req, options);
      const { appsDomain } = options;
      const path = pathOf(req.url ?? '/');
      forwardUpgrade(req, socket, head, { target, path, own: headers, appsDomain, timeoutMs: PROXY_TIMEOUT_MS });
    },
  };
}
