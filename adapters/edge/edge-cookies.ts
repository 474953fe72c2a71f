import type { IncomingMessage } from 'node:http';

/** The cookie that opens a private project's site: the edge's own, never an app's. */
export const ACCESS_COOKIE = 'hoist_access';

/**
 * How many `hoist_access` values of one Cookie header are tried: enough that a value planted ahead of the real one
 * (another tenant's page setting `hoist_access=x; Domain=<appsDomain>`) cannot shadow it, few enough that a huge
 * Cookie header costs next to nothing.
 */
export const ACCESS_COOKIES_TRIED = 5;

/**
 * The `hoist_access` values of a Cookie header, in order, at most ACCESS_COOKIES_TRIED of them (decoded as the
 * `cookie` package does: surrounding quotes dropped, percent-escapes decoded when valid).
 */
export function accessCookies(header: string | undefined): string[] {
  const values: string[] = [];
  if (!header) return values;
  let at = 0;
  while (at < header.length && values.length < ACCESS_COOKIES_TRIED) {
    let end = header.indexOf(';', at);
    if (end < 0) end = header.length;
    const eq = header.indexOf('=', at);
    if (eq > at && eq < end && header.slice(at, eq).trim() === ACCESS_COOKIE) {
      let value = header.slice(eq + 1, end).trim();
      if (value.length > 1 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
      if (value.includes('%')) {
        try {
          value = decodeURIComponent(value);
        } catch {
          // Kept as sent, as the cookie package does.
        }
      }
      if (value) values.push(value);
    }
    at = end + 1;
  }
  return values;
}

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
