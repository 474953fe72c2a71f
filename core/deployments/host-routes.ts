import type { ReleaseTarget } from '../entities/deployment.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import { token, type Logger } from '../tokens.js';

/** What the edge needs to serve a project. */
export interface LiveRelease {
  projectId: string;
  deploymentId: string;
  visibility: string;
  target: ReleaseTarget;
  /**
   * What may open a private project now (the `jti` of a valid access token: its password's proof,
   * each grant's); empty for other projects.
   */
  accessProofs: ReadonlySet<string>;
  /** A preview's expiry (ms since the epoch): from then on it is not served. Absent for a live release. */
  expiresAt?: number;
}

/**
 * Which release the edge serves for a Host header, from memory (core/deployments/routing-table.ts).
 * Take it once per request (and per WebSocket upgrade): the entry is immutable, so the request is
 * answered from one release even while a switch lands.
 */
export interface HostRoutes {
  /**
   * The live release of the active project a Host header names: `<slug>.<appsDomain>`, or an
   * `active` customer domain of the project; or the preview a preview host names, until it expires.
   * Null for any other host, or when nothing is live yet.
   */
  lookup(host: string | undefined): LiveRelease | null;
  /** The same as `lookup`, for callers that await. */
  liveReleaseOf(host: string | undefined): Promise<LiveRelease | null>;
}

export const HOST_ROUTES = token<HostRoutes>('hoist.HostRoutes');

/** The change-feed channel of routes: key = a project id, announced after each write that changes what edges serve. */
export const ROUTES_CHANNEL = 'routes';

/**
 * Announces, after its write committed, that what the edge serves for project `projectId` changed
 * (live release, release target, visibility, slug, status, customer domains, access password or
 * grants). A lost announcement is repaired by the edge's periodic revalidation, so a failure is logged,
 * never thrown at the write that already committed.
 */
export async function routesChanged(changes: ChangeFeed | undefined, projectId: string, log?: Logger): Promise<void> {
  if (!changes) return;
  await changes
    .publish(ROUTES_CHANNEL, projectId)
    .catch((err: Error) => log?.warn({ projectId, reason: err.message }, 'routes change not announced'));
}

/** The hostname of a Host header: lowercased, without port or trailing dot; null when absent. */
export function hostnameOf(host: string | undefined): string | null {
  if (!host) return null;
  const name = host.replace(/:\d+$/, '').toLowerCase().replace(/\.$/, '');
  return name || null;
}

/** The project slug a Host header names under the apps domain, or null. */
export function slugOfHost(host: string | undefined, appsDomain: string): string | null {
  const name = hostnameOf(host);
  const suffix = `.${appsDomain.toLowerCase()}`;
  if (!name?.endsWith(suffix)) return null;
  const slug = name.slice(0, -suffix.length);
  return /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(slug) ? slug : null;
}
