import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { StageError } from '../../core/operations/stage-error.js';

export interface RunOptions {
  cwd: string;
  /** The whole environment of the child (nothing is inherited beyond it). */
  env: Record<string, string>;
  timeoutMs: number;
  /** Heap cap for Node.js processes the command starts, in MiB (through NODE_OPTIONS). */
  memoryMb: number;
  signal: AbortSignal;
  log(line: string): void;
  /** Error code prefix for failures, e.g. `build` gives build_failed and build_timeout. */
  codePrefix: string;
}

/**
 * Runs a shell command in its own process group, streaming each output line to `log`. Kills the
 * whole group on abort or time-out. Resolves on exit code 0; otherwise throws a StageError coded
 * `<prefix>_failed`, `<prefix>_timeout` or `<prefix>_canceled`.
 */
export function runCommand(command: string, opts: RunOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const env = { ...opts.env, NODE_OPTIONS: `${opts.env.NODE_OPTIONS ?? ''} --max-old-space-size=${opts.memoryMb}`.trim() };
    const child = spawn('sh', ['-c', command], { cwd: opts.cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let why: 'timeout' | 'canceled' | null = null;
    const kill = (reason: 'timeout' | 'canceled') => {
      why ??= reason;
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => kill('timeout'), opts.timeoutMs);
    const onAbort = () => kill('canceled');
    if (opts.signal.aborted) onAbort();
    opts.signal.addEventListener('abort', onAbort, { once: true });
    for (const stream of [child.stdout, child.stderr]) createInterface({ input: stream, crlfDelay: Infinity }).on('line', (l) => opts.log(l));
    const finish = (err: StageError | null) => {
      clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve();
    };
    child.on('error', (err) =>
      finish(new StageError(`${opts.codePrefix}_failed`, `Could not start "${command}": ${err.message}`, false, {}, { cause: err })),
    );
    child.on('close', (code, sig) => {
      if (why === 'timeout') return finish(new StageError(`${opts.codePrefix}_timeout`, `"${command}" did not finish within ${Math.round(opts.timeoutMs / 1000)} s`, true));
      if (why === 'canceled') return finish(new StageError(`${opts.codePrefix}_canceled`, `"${command}" was stopped: the operation was canceled`, false));
      if (code === 0) return finish(null);
      finish(new StageError(`${opts.codePrefix}_failed`, `"${command}" exited with ${code ?? sig}`, true, { exit_code: code, signal: sig }));
    });
  });
}
