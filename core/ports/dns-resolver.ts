import { HoistError } from '../errors.js';
import { token } from '../tokens.js';

/**
 * Looks DNS records up. Plugin: `resolver-system` (node:dns, the system's resolver or the servers named
 * by `dnsServers`). A name that does not exist (NXDOMAIN) or has no record of the asked type
 * (NODATA) answers `[]`; any other failure (timeout, SERVFAIL, REFUSED, unreachable server) throws
 * a DnsLookupError.
 */
export interface DnsResolver {
  /** The TXT records of `name`, each record's strings joined into one; `[]` when there are none. */
  resolveTxt(name: string): Promise<string[]>;
  /** The CNAME targets of `name`, lowercased and without a trailing dot; `[]` when there are none. */
  resolveCname(name: string): Promise<string[]>;
  /** The IPv4 addresses of `name` (CNAMEs followed); `[]` when there are none. */
  resolve4(name: string): Promise<string[]>;
}

export const DNS_RESOLVER = token<DnsResolver>('hoist.DnsResolver');

/** Why a lookup failed: no answer in time, the server failed or refused, or anything else. */
export type DnsFailure = 'timeout' | 'servfail' | 'refused' | 'unreachable' | 'other';

/** A lookup that failed for another reason than the records being absent; `cause` is the resolver's error. */
export class DnsLookupError extends HoistError {
  constructor(
    readonly hostname: string,
    readonly reason: DnsFailure,
    options?: { cause?: unknown },
  ) {
    super('unavailable', `DNS lookup of ${hostname} failed (${reason})`, { hostname, reason }, options);
  }
}
