import type { IncomingMessage } from 'node:http';

/** The cookie that opens a private project's site: the edge's own, never an app's. */
export const ACCESS_COOKIE = 'hoist_access';

/** Removes the access cookie from a request before it goes to a release: the app behind the edge never sees it. */
export function withoutAccessCookie(req: IncomingMessage): void {
  if (!req.headers.cookie) return;
  const rest = req.headers.cookie
    .split(';')
    .filter((pair) => pair.split('=')[0].trim() !== ACCESS_COOKIE)
    .join(';')
    .trim();
  if (rest) req.headers.cookie = rest;
  else delete req.headers.cookie;
}

/**
 * Whether a release's `Set-Cookie` value may reach the client: not the access cookie, and not a cookie for the apps
 * domain or a parent of it (`Domain=<appsDomain>`), which the browser would send to every other tenant's site (a
 * planted access cookie locking visitors out of a private site, a fixed session, a cookie bomb). A cookie for the
 * release's own host, or for a customer's own domain, passes.
 */
export function tenantCookie(value: string, appsDomain: string): boolean {
  const [pair, ...attributes] = value.split(';');
  if (pair.split('=')[0].trim() === ACCESS_COOKIE) return false;
  for (const attribute of attributes) {
    const [name, domain = ''] = attribute.split('=');
    if (name.trim().toLowerCase() !== 'domain') continue;
    // As loosely as any browser may read it: quoted, with a leading or a trailing dot.
    const d = domain
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .replace(/^\.+|\.+$/g, '')
      .toLowerCase();
    if (d && (appsDomain === d || appsDomain.endsWith(`.${d}`))) return false;
  }
  return true;
}
