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
