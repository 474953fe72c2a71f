import { spawn, type ChildProcess } from 'node:child_process';
import { hoistBin, root, type TestCli } from './cli.js';

export { freePort } from '../../plugins/shared/sandbox/free-port.js';

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
