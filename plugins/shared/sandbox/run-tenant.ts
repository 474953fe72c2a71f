import { realpath } from 'node:fs/promises';
import { relative, sep } from 'node:path';
import type { HoistConfig } from '../../../core/plugin.js';
import { StageError } from '../../../core/errors.js';
import type { NetworkPolicy, Sandbox, SandboxLimits } from '../../../core/ports/sandbox.js';

/** One tenant command of a stage. */
export interface TenantCommand {
  workspace: string;
  home?: string;
  env: Record<string, string>;
  network: NetworkPolicy;
  limits: SandboxLimits;
  signal: AbortSignal;
  /** Whose code it is (SandboxRun.tenant). */
  tenant?: string;
  log(line: string): void;
  /** Error code prefix, e.g. `build` gives build_failed, build_timeout, build_memory_limit... */
  codePrefix: string;
  /** The setting that raises each limit, named in the messages. */
  settings: { timeMs: string; memoryMb: string; outputBytes: string; diskMb: string };
}

/**
 * Runs `command` in the sandbox and resolves on exit code 0; otherwise throws a StageError coded
 * `<prefix>_failed` (with the exit code), `_timeout`, `_canceled`, `_memory_limit`,
 * `_output_limit` or `_disk_limit`, whose message says which limit stopped it and how to raise it.
 */
export async function runTenant(sandbox: Sandbox, command: string, c: TenantCommand): Promise<void> {
  const r = await sandbox.run({
    command,
    workspace: c.workspace,
    home: c.home,
    env: c.env,
    network: c.network,
    limits: c.limits,
    signal: c.signal,
    tenant: c.tenant,
    log: c.log,
  });
  const p = c.codePrefix;
  switch (r.reason) {
    case 'exited':
      if (r.exitCode === 0) return;
      throw new StageError(`${p}_failed`, `"${command}" exited with ${r.exitCode ?? r.signal}`, {
        exit_code: r.exitCode,
        signal: r.signal,
      });
    case 'timeout':
      throw new StageError(
        `${p}_timeout`,
        `"${command}" did not finish within ${Math.round(c.limits.timeMs / 1000)} s (${c.settings.timeMs})`,
      );
    case 'canceled':
      throw new StageError(`${p}_canceled`, `"${command}" was stopped: the operation was canceled`);
    case 'memory':
      throw new StageError(
        `${p}_memory_limit`,
        `"${command}" used more than ${c.limits.memoryMb} MiB of memory and was stopped (${c.settings.memoryMb})`,
      );
    case 'output':
      throw new StageError(
        `${p}_output_limit`,
        `"${command}" printed more than ${c.limits.outputBytes} bytes and was stopped (${c.settings.outputBytes})`,
      );
    case 'disk':
      throw new StageError(
        `${p}_disk_limit`,
        `"${command}" wrote more than ${c.limits.diskMb} MiB, or files Hoist cannot measure (in a folder without ` +
          `read permission), and was stopped (${c.settings.diskMb})`,
      );
  }
}

/** Throws `build_output_invalid` unless `dir` is a real directory inside `root` (no symbolic link on the way). */
export async function checkRealDirectory(root: string, dir: string, name: string): Promise<void> {
  const [realRoot, real] = await Promise.all([realpath(root), realpath(dir).catch(() => null)]);
  if (real === null) return;
  const rel = relative(realRoot, real);
  if (rel !== relative(root, dir) || rel.startsWith('..') || rel.startsWith(sep)) {
    throw new StageError('build_output_invalid', `output_directory "${name}" is a symbolic link or leaves the project`);
  }
}

/** The sandbox limits of one build command, the time limit being what is left until `deadline`. */
export function buildCommand(
  config: HoistConfig,
  deadline: number,
): Pick<TenantCommand, 'limits' | 'settings' | 'codePrefix'> {
  return {
    codePrefix: 'build',
    limits: {
      timeMs: Math.max(1, deadline - Date.now()),
      memoryMb: config.buildMemoryMb,
      processes: config.buildProcesses,
      outputBytes: config.buildOutputBytes,
      diskMb: config.buildDiskMb,
    },
    settings: {
      timeMs: 'HOIST_BUILD_TIMEOUT_SECONDS',
      memoryMb: 'HOIST_BUILD_MEMORY_MB',
      outputBytes: 'HOIST_BUILD_OUTPUT_BYTES',
      diskMb: 'HOIST_BUILD_DISK_MB',
    },
  };
}

/**
 * NODE_OPTIONS with a heap cap of three quarters of `memoryMb`, so Node.js fails with its own message before the
 * sandbox's memory limit kills it.
 */
export function nodeHeapCap(env: Record<string, string>, memoryMb: number): string {
  return `${env.NODE_OPTIONS ?? ''} --max-old-space-size=${Math.max(16, Math.floor((memoryMb * 3) / 4))}`.trim();
}
