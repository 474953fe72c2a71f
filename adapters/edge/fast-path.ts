import { parseCookie } from 'cookie';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { AccessTokenCache } from '../../core/access/access-token-cache.js';
import type { HostRoutes, LiveRelease } from '../../core/deployments/host-routes.js';
import type { Kernel } from '../kernel.js';
import { metricsOf } from '../observability/metrics.js';
import { ACCESS_COOKIE } from './access-gate.js';
import { GATE_PREFIX } from './access-pages.js';
import { hostHeaders } from './host-headers.js';
import { serveStatic } from './static-files.js';

/** The route label of every edge request in the metrics (fastify's, for its catch-all route). */
export const EDGE_ROUTE = '/*';

const headersOfRelease = new WeakMap<LiveRelease, OutgoingHttpHeaders>();

/**
 * Headers every answer of `release` carries: which release answered, and noindex unless it is public.
 * One object per routing-table entry (a change of release or visibility makes a new entry), never
 * changed: static-files keeps the headers it builds for a file by it.
 */
export function releaseHeaders(release: LiveRelease): OutgoingHttpHeaders {
  let headers = headersOfRelease.get(release);
  if (!headers) {
    headers = { 'x-hoist-release': release.deploymentId };
    if (release.visibility !== 'public') headers['x-robots-tag'] = 'noindex';
    headersOfRelease.set(release, Object.freeze(headers));
  }
  return headers;
}

/** Counts `res` in the edge's request metrics once it is sent (a request fastify never saw). */
export function countWhenDone(kernel: Kernel, req: IncomingMessage, res: ServerResponse): void {
  const { requests, requestSeconds } = metricsOf(kernel);
  const start = performance.now();
  const method = req.method ?? 'GET';
  res.once('finish', () => {
    requests.inc({ role: 'edge', method, route: EDGE_ROUTE, status: String(res.statusCode) });
    requestSeconds.observe({ role: 'edge', method, route: EDGE_ROUTE }, (performance.now() - start) / 1000);
  });
}

/**
 * The edge's hot path on node:http: a GET or HEAD without a body, with one Host header, for a static
 * release of a public or draft project, or of a private one with an access cookie verified before
 * that still opens it. It takes the release once from the in-memory routing table and answers from
 * it: no database query, no fastify, no info log unless `edgeAccessLogEvery` asks for a sample. Returns
 * false for anything else, which goes on to fastify (gate pages, proxying, 405, two Host headers).
 */
export function createFastPath(kernel: Kernel, routes: HostRoutes, cookies: AccessTokenCache) {
  const every = kernel.config.edgeAccessLogEvery;
  const log = kernel.log.child({ role: 'edge' });
  let seen = 0;
  return (req: IncomingMessage, res: ServerResponse): boolean => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const { headers } = req;
    if ((headers['content-length'] && headers['content-length'] !== '0') || headers['transfer-encoding']) return false;
    if (hostHeaders(req.rawHeaders) !== 1) return false;
    const release = routes.lookup(headers.host);
    if (!release || release.target.kind !== 'static') return false;
    if (release.visibility === 'private') {
      if (req.url?.startsWith(GATE_PREFIX.slice(0, -1))) return false;
      const cookie = headers.cookie ? parseCookie(headers.cookie)[ACCESS_COOKIE] : undefined;
      const claims = cookies.known(cookie);
      if (!claims || claims.sub !== release.projectId || !release.accessProofs.has(claims.jti)) return false;
    }
    countWhenDone(kernel, req, res);
    if (every > 0 && ++seen % every === 0)
      res.once('finish', () =>
        log.info({ method: req.method, host: headers.host, url: req.url, status: res.statusCode }, 'edge request'),
      );
    const { root } = release.target;
    serveStatic(req, res, { deploymentId: release.deploymentId, root, headers: releaseHeaders(release) }).catch(
      (err: Error) => {
        log.error({ reason: err.message, url: req.url }, 'static answer failed');
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        res.end();
      },
    );
    return true;
  };
}
