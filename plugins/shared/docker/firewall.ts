import type Docker from 'dockerode';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { promisify } from 'node:util';
import { DENIED_RANGES } from '../sandbox/denied-ranges.js';
import { bridgeInterface } from './network.js';

const run = promisify(execFile);

// Refused at once (a TCP reset, else ICMP unreachable) rather than dropped: a build's attempt fails
// fast instead of waiting out its connect timeout.
const REFUSE = [
  ['-p', 'tcp', '-j', 'REJECT', '--reject-with', 'tcp-reset'],
  ['-j', 'REJECT'],
];

/** The iptables chain holding the denied ranges, jumped to from DOCKER-USER for each guarded bridge. */
export const GUARD_CHAIN = 'HOIST-TENANTS';

/** The ranges of `sandboxDenyCidrs` (comma-separated `a.b.c.d/n` or addresses); throws naming the first that is not. */
export function parseCidrs(text: string | undefined): string[] {
  const out: string[] = [];
  for (const item of (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [addr, bits, extra] = item.split('/');
    const family = isIP(addr);
    const max = family === 4 ? 32 : 128;
    if (!family || extra !== undefined || (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= max)))
      throw new Error(`sandboxDenyCidrs: ${JSON.stringify(item)} is not an address range (a.b.c.d/n)`);
    out.push(bits === undefined ? `${addr}/${max}` : item);
  }
  return out;
}

/** A TCP service let through a guarded bridge to a denied range: the npm registry's address and port. */
export interface AllowedService {
  address: string;
  port: number;
}

/** What a guarded bridge may not reach, and what is let through anyway. */
export interface GuardRules {
  deny: string[];
  /**
   * Services reachable on their one TCP port (the npm registry's), never the other ports of their host: a private
   * registry may share a machine with Hoist's PostgreSQL, NATS or S3.
   */
  allow: AllowedService[];
  /** DNS servers reachable on port 53 (Docker's embedded DNS asks them from the container's namespace). */
  dns: string[];
}

/**
 * Keeps the containers on the bridge whose host interface is `iface` away from this host and from
 * DENIED_RANGES plus `rules.deny` (but for `rules.allow`), with iptables rules added once each
 * (idempotent, safe from several processes):
 *   INPUT       -i iface  (not ESTABLISHED,RELATED)  REJECT
 *     every address of this host, through the bridge gateway or not
 *   DOCKER-USER -i iface  -j HOIST-TENANTS
 *     forwarded traffic: answers, `allow` (its port only) and DNS to `dns` pass, the ranges are refused
 * Connections the host opens to a container (the edge to a release) still get their answers. IPv4
 * only: Hoist's networks have no IPv6. Resolves null once the rules are in place, else a sentence
 * saying why they cannot be (not root, the bridge is not on this machine, no iptables).
 */
export async function guardBridge(iface: string, rules: GuardRules): Promise<string | null> {
  if (process.getuid?.() !== 0) return 'Hoist does not run as root, so it cannot add iptables rules';
  if (!existsSync(`/sys/class/net/${iface}`))
    return (
      `the bridge ${iface} is not on this machine ` +
      '(the Docker engine is remote, or Hoist runs in a container of its own)'
    );
  const v4 = (list: string[]) => list.filter((c) => isIP(c.split('/')[0]) === 4);
  const answers = ['-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'RETURN'];
  try {
    // Fails when the chain exists already (an earlier start): ensure() checks each rule below either way.
    await run('iptables', ['-w', '-N', GUARD_CHAIN]).catch(() => {});
    await ensure(GUARD_CHAIN, answers, ['-I', GUARD_CHAIN, '1']);
    await dropAnyPortAllows();
    for (const { address, port } of rules.allow.filter((a) => isIP(a.address) === 4))
      await ensure(
        GUARD_CHAIN,
        ['-d', address, '-p', 'tcp', '-m', 'tcp', '--dport', String(port), '-j', 'RETURN'],
        ['-I', GUARD_CHAIN, '2'],
      );
    for (const addr of v4(rules.dns)) {
      for (const proto of ['udp', 'tcp'])
        await ensure(GUARD_CHAIN, ['-d', addr, '-p', proto, '--dport', '53', '-j', 'RETURN'], ['-I', GUARD_CHAIN, '2']);
    }
    for (const range of [...DENIED_RANGES, ...v4(rules.deny)]) {
      for (const refuse of REFUSE) await ensure(GUARD_CHAIN, ['-d', range, ...refuse], ['-A', GUARD_CHAIN]);
    }
    // The catch-all REJECT goes in first, so the TCP reset lands above it.
    for (const refuse of [...REFUSE].reverse())
      await ensure(
        'INPUT',
        ['-i', iface, '-m', 'conntrack', '!', '--ctstate', 'ESTABLISHED,RELATED', ...refuse],
        ['-I', 'INPUT', '1'],
      );
    await ensure('DOCKER-USER', ['-i', iface, '-j', GUARD_CHAIN], ['-I', 'DOCKER-USER', '1']);
    return null;
  } catch (err) {
    return `iptables failed: ${((err as { stderr?: string }).stderr || (err as Error).message).trim()}`;
  }
}

/**
 * Deletes the rules of GUARD_CHAIN that let an address through on every port (`-d <addr> -j RETURN`), as Hoist up to
 * this version added for the npm registry: left in place, they would keep the registry host's other ports open.
 */
async function dropAnyPortAllows(): Promise<void> {
  const { stdout } = await run('iptables', ['-w', '-S', GUARD_CHAIN]);
  for (const m of stdout.matchAll(/^-A \S+ -d (\S+) -j RETURN$/gm))
    // Another process may have deleted it first.
    await run('iptables', ['-w', '-D', GUARD_CHAIN, '-d', m[1], '-j', 'RETURN']).catch(() => {});
}

/** Adds `rule` to `chain` with `add` (e.g. `-I chain 1`) unless it is there. */
async function ensure(chain: string, rule: string[], add: string[]): Promise<void> {
  const present = await run('iptables', ['-w', '-C', chain, ...rule]).then(
    () => true,
    () => false,
  );
  if (!present) await run('iptables', ['-w', ...add, ...rule]);
}

/**
 * The IPv4 DNS servers this machine's resolver uses (what a local Docker engine forwards containers'
 * queries to), loopback ones left out.
 */
export function hostDnsServers(files = ['/etc/resolv.conf', '/run/systemd/resolve/resolv.conf']): string[] {
  const out = new Set<string>();
  for (const f of files) {
    const text = existsSync(f) ? readFileSync(f, 'utf8') : '';
    for (const m of text.matchAll(/^\s*nameserver\s+(\S+)/gm))
      if (isIP(m[1]) === 4 && !m[1].startsWith('127.')) out.add(m[1]);
  }
  return [...out];
}

/**
 * Firewalls the network releases run on off this host and the private ranges (guardBridge, nothing
 * allowed); when that cannot be done here, warns once, naming `who` and what is not enforced.
 */
export async function guardReleaseNetwork(
  net: Docker.NetworkInspectInfo,
  opts: { who: string; deny: string[]; warn(message: string): void },
): Promise<void> {
  const why = await guardBridge(bridgeInterface(net), { deny: opts.deny, allow: [], dns: hostDnsServers() });
  if (why)
    opts.warn(
      `${opts.who}: releases on the ${net.Name} network can reach this host's ports and private ranges: ${why}`,
    );
}
