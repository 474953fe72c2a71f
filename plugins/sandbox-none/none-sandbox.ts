import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix, resolve } from 'node:path';
import {
  SandboxError,
  type Sandbox,
  type SandboxResult,
  type SandboxRun,
  type SandboxServe,
  type SandboxService,
} from '../../core/ports/sandbox.js';
import { freePort } from '../shared/sandbox/free-port.js';
import { watchRun } from '../shared/sandbox/watch-run.js';

/**
 * No sandbox: tenant commands run on the host as Hoist's own user, in their workspace, with only
 * the time and output limits (and Node.js' heap cap). Any account can then read every secret Hoist
 * holds and reach every service it can, so this is for a machine with one trusted user; every start
 * warns, and it refuses to run anything while Hoist runs as root.
 */
export class NoneSandbox implements Sandbox {
  readonly id = 'sandbox-none';

  constructor(private readonly warn: (message: string) => void) {}

  private warned = false;

  async prepare(): Promise<void> {
    if (this.warned) return;
    this.warned = true;
    this.warn(
      'HOIST_SANDBOX=none: tenant code (installs, builds, Node.js releases) runs with ' +
        "Hoist's own privileges. Any account can read every secret (jwt.key, " +
        'master-keys.json, the database) and reach every service Hoist reaches. Use it ' +
        'only on a machine with one trusted user.',
    );
    if (process.getuid?.() === 0)
      this.warn('HOIST_SANDBOX=none while running as root: every tenant command will be refused.');
  }

  async run(spec: SandboxRun): Promise<SandboxResult> {
    const { done } = await this.launch(spec, spec.limits.timeMs, spec.signal);
    return done;
  }

  async serve(spec: SandboxServe): Promise<SandboxService> {
    const port = await freePort();
    const { done, stop } = await this.launch(
      { ...spec, env: { ...spec.env, PORT: String(port), HOST: '127.0.0.1' } },
      undefined,
      undefined,
    );
    return {
      url: `http://127.0.0.1:${port}`,
      exited: done,
      stop: async () => {
        stop('canceled');
        await done;
      },
    };
  }

  private async launch(
    spec: Omit<SandboxRun, 'limits' | 'signal'> & { limits: { outputBytes: number } },
    timeMs: number | undefined,
    signal: AbortSignal | undefined,
  ) {
    await this.prepare();
    if (process.getuid?.() === 0)
      throw new SandboxError(
        'HOIST_SANDBOX=none refuses to run tenant code as root: choose ' +
          'HOIST_SANDBOX=bwrap or docker, or run Hoist as an unprivileged user',
      );
    const cwd = resolve(spec.workspace, spec.cwd ?? '.');
    if (posix.relative(spec.workspace, cwd).startsWith('..'))
      throw new SandboxError(`cwd ${JSON.stringify(spec.cwd)} leaves the workspace`);
    const home = spec.home ?? (await mkdtemp(join(tmpdir(), 'hoist-home-')));
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...spec.env };
    const child = spawn('/bin/sh', ['-c', spec.command], {
      cwd,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const watch = watchRun(child, { timeMs, outputBytes: spec.limits.outputBytes, signal, log: spec.log, kill });
    const done = watch.done.finally(() => (spec.home ? undefined : rm(home, { recursive: true, force: true })));
    return { done, stop: watch.stop };
  }
}
