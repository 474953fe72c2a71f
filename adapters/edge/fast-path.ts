import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { AccessTokenCache } from '../../core/access/access-token-cache.js';
import type { HostRoutes, LiveRelease } from '../../core/deployments/host-routes.js';
import type { Kernel } from '../kernel.js';
import { metricsOf } from '../observability/metrics.js';
import { accessCookies, withoutAccessCookie } from './edge-cookies.js';
import { GATE_PREFIX } from './access-pages.js';
import { hostHeaders } from './host-headers.js';
import type { createReleaseProxy } from './proxy.js';
import { serveStatic, type StaticRelease } from './static-files.js';
import { servedFor } from './usage-meter.js';

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

const staticOfRelease = new WeakMap<LiveRelease, StaticRelease>();

/** What serveStatic needs of `release`, served from `root`: one object per routing-table entry, as its headers. */
export function staticRelease(release: LiveRelease, root: string): StaticRelease {
  let found = staticOfRelease.get(release);
  if (!found) {
    found = { deploymentId: release.deploymentId, root, headers: releaseHeaders(release) };
    staticOfRelease.set(release, found);
  }
  return found;
}

const OPENED = Symbol('hoist.opened');
/** What opened a private project on one connection: the Cookie header, the routing entry it was checked against. */
interface Opened {
  cookie: string;
  release: LiveRelease;
  until: number;
}
type WithOpened = Socket & { [OPENED]?: Opened };

/**
 * Whether `cookie` (a Cookie header) was found to open `release` before on `socket`, and has not expired: a visitor's
 * kept-alive connection checks its cookie once. The entry is the routing table's: a new password, a removed grant or a
 * change of visibility or release makes a new one, so such a change is checked again at the next request.
 */
function opensOn(socket: Socket, cookie: string | undefined, release: LiveRelease): boolean {
  const opened = (socket as WithOpened)[OPENED];
  return !!opened && opened.release === release && opened.cookie === cookie && opened.until > Date.now();
}

function openedOn(socket: Socket, cookie: string, release: LiveRelease, until: number): void {
  (socket as WithOpened)[OPENED] = { cookie, release, until };
}

/**
 * The edge's hot path on node:http: a GET or HEAD without a body, with one Host header, for a release
 * of a public or draft project, or of a private one with an access cookie verified before that still
 * opens it. It takes the release once from the in-memory routing table and answers from it: a static
 * release from its files, a Node.js release through `proxy.plain` (then without Content-Length and
 * Upgrade too): no database query, no fastify, no info log unless `edgeAccessLogEvery` asks for a
 * sample. Returns false for anything else, which goes on to fastify (gate pages, request bodies, 405,
 * two Host headers).
 */
export function createFastPath(
  kernel: Kernel,
  routes: HostRoutes,
  cookies: AccessTokenCache,
  proxy: ReturnType<typeof createReleaseProxy>,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const every = kernel.config.edgeAccessLogEvery;
  const log = kernel.log.child({ role: 'edge' });
  const { tally } = metricsOf(kernel);
  const count = (method: string, status: number, start: number) =>
    tally.count('edge', method, EDGE_ROUTE, status, (performance.now() - start) / 1000);
  const countWhenSent = (method: string, res: ServerResponse, start: number) =>
    res.once('finish', () => count(method, res.statusCode, start));
  const failed = (req: IncomingMessage, res: ServerResponse) => (err: Error) => {
    log.error({ reason: err.message, url: req.url }, 'static answer failed');
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
    res.end();
  };
  let seen = 0;
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const { headers } = req;
    if ((headers['content-length'] && headers['content-length'] !== '0') || headers['transfer-encoding']) return false;
    if (hostHeaders(req.rawHeaders) !== 1) return false;
    const release = routes.lookup(headers.host);
    if (!release) return false;
    servedFor(res, release.projectId);
    const { target } = release;
    if (target.kind === 'http' && (headers['content-length'] !== undefined || headers.upgrade !== undefined))
      return false;
    const method = req.method;
    if (release.visibility === 'private') {
      if (req.url?.startsWith(GATE_PREFIX.slice(0, -1))) return false;
      if (!opensOn(req.socket, headers.cookie, release)) {
        // Any of its access cookies may open it: one planted ahead of the real one does not shadow it.
        let claims = null;
        for (const cookie of accessCookies(headers.cookie)) {
          const known = cookies.known(cookie);
          if (known && known.sub === release.projectId && release.accessProofs.has(known.jti)) {
            claims = known;
            break;
          }
        }
        if (!claims) return false;
        openedOn(req.socket, headers.cookie!, release, claims.expiresAt.getTime());
      }
    }
    const start = performance.now();
    if (every > 0 && ++seen % every === 0)
      res.once('finish', () =>
        log.info({ method, host: headers.host, url: req.url, status: res.statusCode }, 'edge request'),
      );
    if (target.kind === 'http') {
      countWhenSent(method, res, start);
      // The access cookie is the edge's: the app behind it never sees it.
      if (release.visibility === 'private') withoutAccessCookie(req);
      proxy.plain(req, res, target, releaseHeaders(release));
      return true;
    }
    const answering = serveStatic(req, res, staticRelease(release, target.root));
    // Answered at once (from memory): counted now; else once sent.
    if (!answering) count(method, res.statusCode, start);
    else {
      countWhenSent(method, res, start);
      answering.catch(failed(req, res));
    }
    return true;
  };
}
