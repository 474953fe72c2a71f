import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import { DnsLookupError, type DnsFailure, type DnsResolver } from '../../core/ports/dns-resolver.js';

/** What a node:dns error code means for a caller: no records, or a failure. */
const ABSENT = new Set(['ENOTFOUND', 'ENODATA']);
const FAILURES: Record<string, DnsFailure> = {
  ETIMEOUT: 'timeout',
  ECANCELLED: 'timeout',
  ESERVFAIL: 'servfail',
  EREFUSED: 'refused',
  ECONNREFUSED: 'unreachable',
};

/** Options of a SystemDnsResolver. */
export interface SystemDnsOptions {
  /** `host` or `host:port` entries (`[v6]:port` for IPv6); empty means the system's resolvers. */
  servers: string[];
  /** Time allowed for one try, in milliseconds. */
  timeoutMs: number;
  /** Tries per server before a lookup fails with `timeout`. */
  tries: number;
}

/** Looks records up with node:dns (c-ares), through the system's resolvers or the given servers. */
export class SystemDnsResolver implements DnsResolver {
  private readonly resolver: Resolver;

  constructor(options: SystemDnsOptions) {
    this.resolver = new Resolver({ timeout: options.timeoutMs, tries: options.tries });
    if (options.servers.length) this.resolver.setServers(options.servers);
  }

  async resolveTxt(name: string): Promise<string[]> {
    return (await this.lookup(name, () => this.resolver.resolveTxt(name))).map((chunks) => chunks.join(''));
  }

  async resolveCname(name: string): Promise<string[]> {
    return (await this.lookup(name, () => this.resolver.resolveCname(name))).map((t) =>
      t.toLowerCase().replace(/\.$/, ''),
    );
  }

  async resolve4(name: string): Promise<string[]> {
    return this.lookup(name, () => this.resolver.resolve4(name));
  }

  private async lookup<T>(name: string, run: () => Promise<T[]>): Promise<T[]> {
    try {
      return await run();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (ABSENT.has(code)) return [];
      throw new DnsLookupError(name, FAILURES[code] ?? 'other', { cause: err });
    }
  }
}

/**
 * Parses the `dnsServers` setting: comma-separated `host`, `host:port` or `[v6]:port` entries.
 * Throws an Error naming the bad entry.
 */
export function parseDnsServers(text: string | undefined): string[] {
  if (!text) return [];
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      const m =
        /^\[([^\]]+)\](?::(\d+))?$/.exec(entry) ??
        /^([^:]+)(?::(\d+))?$/.exec(entry) ??
        (isIP(entry) === 6 ? [entry, entry] : null);
      const port = m?.[2] === undefined ? null : Number(m[2]);
      if (!m || !isIP(m[1]) || (port !== null && (port < 1 || port > 65535))) {
        throw new Error(`dnsServers entry ${JSON.stringify(entry)} is not an IP address with an optional :port`);
      }
      return entry;
    });
}
