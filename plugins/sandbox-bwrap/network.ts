import { spawn, type ChildProcess } from 'node:child_process';
import { networkInterfaces } from 'node:os';
import net from 'node:net';
import { SandboxError } from '../../core/ports/sandbox.js';
import { DENIED_RANGES } from '../shared/sandbox/denied-ranges.js';
import { freePort } from '../shared/sandbox/free-port.js';

/** slirp4netns's fixed addresses: the guest, the gateway (the host, whose loopback is disabled) and DNS. */
export const GUEST = '10.0.2.100';
export const SLIRP_DNS = '10.0.2.3';

/**
 * Ranges a sandbox never reaches, whatever the configuration adds: the host's own addresses (read
 * at each run, so bridges made later count), loopback, link-local (cloud metadata), the private and
 * shared ranges where Hoist's services live (PostgreSQL, NATS, S3, Docker), multicast.
 * `allow` (the npm registry's addresses) is let through even inside them.
 */
export function deniedRanges(extra: string[]): { v4: string[]; v6: string[] } {
  const v4 = new Set(DENIED_RANGES);
  const v6 = new Set(['::1', 'fc00::/7', 'fe80::/10', 'ff00::/8']);
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) (a.family === 'IPv4' ? v4 : v6).add(a.address.split('%')[0]);
  }
  for (const r of extra) (r.includes(':') ? v6 : v4).add(r);
  return { v4: [...v4], v6: [...v6] };
}

/** The npm registry a sandbox reaches even inside the denied ranges: its IPv4 addresses, on its one TCP port. */
export interface RegistryAllowance {
  addresses: string[];
  port: number | null;
}

/**
 * The nftables ruleset loaded in a sandbox's network namespace: the denied ranges are refused at once, but for
 * slirp's DNS (which slirp4netns itself forwards on port 53 only) and the registry's addresses on the registry's
 * port alone (its other ports, say a PostgreSQL on the same machine, stay refused).
 */
export function denyRuleset(ranges: { v4: string[]; v6: string[] }, registry: RegistryAllowance): string {
  const v4 = registry.addresses.filter((a) => !a.includes(':'));
  return [
    'table inet hoist_sandbox {',
    '  chain out {',
    '    type filter hook output priority 0; policy accept;',
    // Answers on connections the edge opened to a published port come from the gateway's address.
    '    ct state established,related accept',
    '    oifname "lo" accept',
    `    ip daddr ${SLIRP_DNS} accept`,
    ...(v4.length && registry.port !== null
      ? [`    ip daddr { ${v4.join(', ')} } tcp dport ${registry.port} accept`]
      : []),
    `    ip daddr { ${ranges.v4.join(', ')} } ip protocol tcp reject with tcp reset`,
    `    ip daddr { ${ranges.v4.join(', ')} } reject`,
    `    ip6 daddr { ${ranges.v6.join(', ')} } meta l4proto tcp reject with tcp reset`,
    `    ip6 daddr { ${ranges.v6.join(', ')} } reject`,
    '  }',
    '}',
    '',
  ].join('\n');
}

/** Runs a helper to its end and rejects with its stderr when it fails. */
export function runHelper(argv: string[], input?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), {
      stdio: ['pipe', 'ignore', 'pipe'],
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
    });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.on('error', (e) => reject(new SandboxError(`${argv[0]}: ${e.message}`)));
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new SandboxError(`${argv.join(' ')} failed (${code}): ${err.trim()}`)),
    );
    // A helper that exits before reading its input (it failed at once) closes the pipe: its exit code says why.
    child.stdin.on('error', () => {});
    child.stdin.end(input ?? '');
  });
}

/** A user-mode network attached to one sandbox: outbound only, plus published ports on the host's loopback. */
export interface SlirpNetwork {
  /** Publishes the sandbox's `guestPort` on 127.0.0.1 of the host; resolves with the host port. */
  publish(guestPort: number): Promise<number>;
  /** Tears the network down. */
  close(): void;
}

/**
 * Attaches slirp4netns to the network namespace of `pid` (run as `asUser`, the sandbox's own uid)
 * with the host's loopback disabled, and resolves once the guest's interface is configured.
 * `apiSocket` is where port forwards are asked for (needed only to publish a port).
 */
export async function attachSlirp(pid: number, asUser: string[], apiSocket: string | null): Promise<SlirpNetwork> {
  const args = [
    '--configure',
    '--mtu=65520',
    '--disable-host-loopback',
    '--enable-seccomp',
    '--ready-fd=3',
    '--exit-fd=4',
  ];
  if (apiSocket) args.push(`--api-socket=${apiSocket}`);
  const child: ChildProcess = spawn(
    asUser.length ? asUser[0] : '/usr/bin/slirp4netns',
    [...asUser.slice(1), ...(asUser.length ? ['/usr/bin/slirp4netns'] : []), ...args, String(pid), 'tap0'],
    {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
      env: {},
    },
  );
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  await new Promise<void>((resolve, reject) => {
    child.stdio[3]!.once('data', () => resolve());
    child.once('error', (e) =>
      reject(new SandboxError(`slirp4netns could not start: ${e.message} (install Debian's slirp4netns)`)),
    );
    child.once('exit', (code) =>
      reject(new SandboxError(`slirp4netns exited (${code}) before the network was up: ${err.trim()}`)),
    );
  });
  child.removeAllListeners('exit');
  return {
    publish: async (guestPort) => {
      if (!apiSocket) throw new SandboxError('no API socket to publish a port on');
      for (let attempt = 0; ; attempt++) {
        const hostPort = await freePort();
        const answer = await slirpApi(apiSocket, {
          execute: 'add_hostfwd',
          arguments: {
            proto: 'tcp',
            host_addr: '127.0.0.1',
            host_port: hostPort,
            guest_addr: GUEST,
            guest_port: guestPort,
          },
        });
        if (!answer.error) return hostPort;
        if (attempt >= 3)
          throw new SandboxError(`slirp4netns could not publish port ${guestPort}: ${JSON.stringify(answer.error)}`);
      }
    },
    close: () => {
      child.stdio[4]?.destroy();
      child.kill('SIGKILL');
    },
  };
}

function slirpApi(path: string, request: unknown): Promise<{ error?: unknown }> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(path);
    let out = '';
    sock.on('connect', () => sock.end(JSON.stringify(request)));
    sock.on('data', (d) => (out += d));
    sock.on('error', (e) => reject(new SandboxError(`slirp4netns API: ${e.message}`)));
    sock.on('close', () => {
      try {
        resolve(JSON.parse(out || '{}'));
      } catch {
        reject(new SandboxError(`slirp4netns API answered ${JSON.stringify(out)}`));
      }
    });
  });
}
