import type { EntityManager } from '@mikro-orm/core';
import { Domain } from '../../core/entities/domain.js';
import { Project } from '../../core/entities/project.js';

/** How many Host headers a request's raw headers carry (Node keeps the first one in `headers`). */
export function hostHeaders(rawHeaders: string[]): number {
  let n = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i].length === 4 && rawHeaders[i].toLowerCase() === 'host') n++;
  return n;
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

/**
 * The slug of the project a Host header names: `<slug>.<appsDomain>`, or an `active` customer
 * domain of an active project (a domain in any other state is not served). Null otherwise. Every
 * host then takes the same path through the edge, so whatever applies to a project's own host
 * (its live release, its access gate) applies to its customer domains alike.
 */
export async function projectSlugOfHost(em: EntityManager, host: string | undefined, appsDomain: string): Promise<string | null> {
  const own = slugOfHost(host, appsDomain);
  if (own) return own;
  const hostname = hostnameOf(host);
  if (!hostname || hostname.length > 253) return null;
  const domain = await em.findOne(Domain, { hostname, status: 'active' }, { fields: ['projectId'] });
  if (!domain) return null;
  const project = await em.findOne(Project, { id: domain.projectId, status: 'active' }, { fields: ['slug'] });
  return project?.slug ?? null;
}
