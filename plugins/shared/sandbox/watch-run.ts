import type { ChildProcess } from 'node:child_process';
import type { SandboxEndReason, SandboxResult } from '../../../core/ports/sandbox.js';
import { followLines } from './follow-lines.js';

/** How to watch one sandboxed process tree. */
export interface WatchOptions {
  /** Wall-clock limit, ms (none when absent). */
  timeMs?: number;
  /** Output bytes allowed before the run is stopped. */
  outputBytes: number;
  signal?: AbortSignal;
  log(line: string): void;
  /** Kills every process of the run at once (called once per reason). */
  kill(): void;
  /** Why a process that ended by a signal ended, when the sandbox knows better (OOM, disk). */
  explain?(code: number | null, signal: string | null): SandboxEndReason | null;
}

/**
 * Streams a child's stdout and stderr line by line to `log`, stops it (through `kill`) at the time
 * limit, past the output budget or on abort, and resolves with how it ended once it has exited and
 * its output is drained. `stop(reason)` on the returned handle stops it from outside.
 */
export function watchRun(
  child: ChildProcess,
  opts: WatchOptions,
): { done: Promise<SandboxResult>; stop(reason: SandboxEndReason): void } {
  let why: SandboxEndReason | null = null;
  const stop = (reason: SandboxEndReason) => {
    if (why) return;
    why = reason;
    opts.kill();
  };
  const streams = [child.stdout, child.stderr].filter((s) => s !== null);
  const drained = followLines(streams, { log: opts.log, limitBytes: opts.outputBytes, over: () => stop('output') });
  const timer = opts.timeMs !== undefined ? setTimeout(() => stop('timeout'), opts.timeMs) : null;
  const onAbort = () => stop('canceled');
  if (opts.signal?.aborted) onAbort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const exited = new Promise<[number | null, string | null]>((resolve) => {
    // Ended before it was watched (a sandbox given up on while it was set up): its 'exit' event has gone by.
    if (child.exitCode !== null || child.signalCode !== null) return resolve([child.exitCode, child.signalCode]);
    child.once('error', () => resolve([null, null]));
    child.once('exit', (code, sig) => resolve([code, sig]));
  });
  const done = exited.then(async ([code, sig]) => {
    if (timer) clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
    // A grandchild may hold the pipes open: kill the tree, and give the output a moment to drain.
    opts.kill();
    await Promise.race([drained, new Promise((r) => setTimeout(r, 2000).unref())]);
    const reason = why ?? opts.explain?.(code, sig) ?? 'exited';
    return { reason, exitCode: reason === 'exited' ? code : null, signal: sig } satisfies SandboxResult;
  });
  return { done, stop };
}
