import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { hoistBin, root, type TestCli } from './cli.js';

/** Whether a server can listen on 127.0.0.1:`port` now (0: any port; resolves the port it got, or null). */
const listenable = (port: number) =>
  new Promise<number | null>((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(null));
    s.listen(port, '127.0.0.1', () => {
      const { port: got } = s.address() as net.AddressInfo;
      s.close(() => resolve(got));
    });
  });

/** The first port of the kernel's ephemeral range (32768 by default), where outgoing connections take theirs. */
const EPHEMERAL_FROM = Number(
  (() => {
    try {
      return readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0];
    } catch {
      return 32768;
    }
  })(),
);

/**
 * A free TCP port on the loopback for a server a test starts afterwards, picked at random below the ephemeral
 * range. A port `listen(0)` gives is from that range, where the suites' own outgoing connections take their local
 * ports: now and then one took it before the server listened (EADDRINUSE in CI, two runs of three in one session).
 */
export async function freePort(): Promise<number> {
  if (EPHEMERAL_FROM > 12_000)
    for (let attempt = 0; attempt < 20; attempt++) {
      const port = await listenable(10_000 + Math.floor(Math.random() * (EPHEMERAL_FROM - 10_000)));
      if (port !== null) return port;
    }
  return (await listenable(0))!;
}

/** Waits until `cond` holds, checking every 100 ms; throws after `ms`. */
export const until = async (cond: () => boolean | Promise<boolean>, ms = 30_000) => {
  const end = performance.now() + ms;
  while (!(await cond())) {
    if (performance.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
};

/** A `hoist start` child process, with what it has printed so far (for a failing test's message). */
export type HoistProcess = ChildProcess & { output(): string };

/**
 * Starts `hoist start` with the test CLI's environment and resolves once its worker runs. With
 * `group`, in a process group of its own, so a test can kill the whole group.
 */
export function startHoist(cli: TestCli, { group = false } = {}): Promise<HoistProcess> {
  const child = group
    ? spawn(process.execPath, [hoistBin, 'start'], {
        cwd: root,
        env: cli.env,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    : cli.spawn(['start']);
  let out = '';
  const hoist = Object.assign(child, { output: () => out });
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      if (/hoist worker running/.test(out)) resolve(hoist);
    });
    child.stderr!.on('data', (d) => (out += d));
    child.on('exit', (code) => reject(new Error(`hoist start exited with ${code}: ${out}`)));
  });
}
