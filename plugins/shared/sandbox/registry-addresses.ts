import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

/** The addresses of the npm registry's host, so that a registry on a private network stays reachable. */
export async function registryAddresses(registry: string | undefined): Promise<string[]> {
  if (!registry) return [];
  const host = new URL(registry).hostname;
  if (isIP(host)) return [host];
  return lookup(host, { all: true }).then(
    (list) => list.map((a) => a.address),
    () => [],
  );
}

/**
 * The TCP port of the npm registry's URL (its own, else 443 for https: and 80 for http:), the only port of its
 * addresses a sandbox is let through to: a registry beside other services (on the host itself, or a private
 * machine that also runs PostgreSQL) must not open them too. Null without a registry.
 */
export function registryPort(registry: string | undefined): number | null {
  if (!registry) return null;
  const url = new URL(registry);
  return url.port ? Number(url.port) : url.protocol === 'http:' ? 80 : 443;
}
