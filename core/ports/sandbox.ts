import { token } from '../tokens.js';

/**
 * Where tenant code runs. Every piece of code an account sends (install commands and their
 * lifecycle scripts, build commands, Node.js releases) runs through this port and nowhere else.
 *
 * A run sees a root made of read-only system directories plus its own writable workspace, mounted
 * at {@link SANDBOX_WORKSPACE}, and nothing else of the host: no data directory, no other
 * workspace, no `/root`, no Docker socket, no host `/proc`. It has a HOME and a `/tmp` of its own,
 * exactly the environment it is given, an unprivileged uid/gid that is not Hoist's, and limits on
 * wall time, memory, processes, output and disk. Its network is `none` (loopback only) or `egress`
 * (the internet and the npm registry, never the host's loopback, Hoist's own services or another
 * sandbox).
 *
 * Plugins: `sandbox-bwrap` (bubblewrap, the embedded default on Linux), `sandbox-docker`
 * (throwaway hardened containers), `sandbox-none` (an explicit setting for one trusted user).
 */
export interface Sandbox {
  /** The plugin id, e.g. `sandbox-bwrap`. */
  readonly id: string;

  /**
   * Proves the sandbox can run here and gets it ready; idempotent. The roles that run tenant code
   * (the worker, and so `hoist start`) call it before they take any work, so a missing tool or a
   * disabled kernel feature stops them at start. Throws a SandboxError naming the package to
   * install or the setting to choose. `run` and `serve` call it too.
   */
  prepare(): Promise<void>;

  /**
   * Runs `command` with `/bin/sh -c` in the workspace and resolves when it has ended, for any
   * reason: a non-zero exit, a limit or a cancel resolve too, with `reason` saying which. Each
   * output line (stdout and stderr) goes to `log` as it is written. Every process the command
   * started is gone when the promise settles. Rejects only when the sandbox itself could not be
   * set up (a SandboxError).
   */
  run(spec: SandboxRun): Promise<SandboxResult>;

  /**
   * Starts a long-running process (a release) that listens on `spec.port` inside the sandbox,
   * publishes that port where the edge (and nothing of any tenant) reaches it, and resolves as
   * soon as the process is started (not when it answers: the caller checks health). The process
   * dies with Hoist: none outlives a crash of the process that started it.
   */
  serve(spec: SandboxServe): Promise<SandboxService>;
}

/** Where the workspace is mounted inside every sandbox, and the working directory of a run. */
export const SANDBOX_WORKSPACE = '/app';

/** HOME of every sandboxed process: `SandboxRun.home` when given, else an empty directory of its own. */
export const HOME_DIR = '/home/sandbox';

/** `none`: loopback only. `egress`: outbound to the internet, never to the host or Hoist's services. */
export type NetworkPolicy = 'none' | 'egress';

/** What a run may use. The run is stopped when it goes past one of them. */
export interface SandboxLimits {
  /** Wall-clock time, ms (ignored by `serve`). */
  timeMs: number;
  /** Memory of all the run's processes together, MiB. */
  memoryMb: number;
  /** Processes and threads at once. */
  processes: number;
  /** Bytes of output (stdout and stderr together); past it the run is stopped. */
  outputBytes: number;
  /** Disk the run may write: the largest file, and the workspace, HOME and /tmp, MiB. */
  diskMb: number;
}

/** One command to run to its end. */
export interface SandboxRun {
  /** A shell command, run as `/bin/sh -c <command>`. */
  command: string;
  /** Host directory whose contents the run sees at {@link SANDBOX_WORKSPACE}; the only host path it may write. */
  workspace: string;
  /** Working directory relative to the workspace (default: the workspace itself). */
  cwd?: string;
  /**
   * Host directory mounted writable as HOME (e.g. to keep a package cache between the runs of one
   * build); like the workspace, no other run sees it. Default: an empty HOME for this run only.
   */
  home?: string;
  /** The whole environment of the command: nothing of Hoist's own environment is added but HOME and PATH defaults. */
  env: Record<string, string>;
  network: NetworkPolicy;
  limits: SandboxLimits;
  /**
   * Whose code this is (the account id): a sandbox that can (bubblewrap with a cgroup's cpu controller) shares CPU
   * time under contention between tenants rather than between runs, so that one running many runs gets no more of a
   * busy host than one running one. Without it the run is a tenant of its own.
   */
  tenant?: string;
  /** Stops the run (every process) when aborted; the result's reason is then `canceled`. */
  signal?: AbortSignal;
  /** Receives each line of output as it is written. */
  log(line: string): void;
}

/** Why a run ended. `exited` is a normal end (any exit code); the others are the sandbox stopping it. */
export type SandboxEndReason = 'exited' | 'timeout' | 'canceled' | 'memory' | 'output' | 'disk';

/** How a run or a served process ended. */
export interface SandboxResult {
  reason: SandboxEndReason;
  /** The exit code when the process exited by itself, else null. */
  exitCode: number | null;
  /** The signal that ended it, when one did (e.g. `SIGKILL`), else null. */
  signal: string | null;
}

/** A long-running process to start. `limits.timeMs` does not apply. */
export interface SandboxServe extends Omit<SandboxRun, 'signal' | 'limits'> {
  /** The port the process listens on inside the sandbox (it gets it as `PORT` in its environment). */
  port: number;
  limits: Omit<SandboxLimits, 'timeMs'>;
}

/** A started long-running process. */
export interface SandboxService {
  /** Where the edge reaches the published port, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /**
   * A unix socket on this host that reaches the same port, for a sandbox that can give one: cheaper to proxy to
   * than `url` (no TCP, and for bubblewrap no slirp4netns). Only Hoist's own processes can open it.
   */
  readonly socket?: string;
  /** Settles once the process has ended, for any reason (a stop included). */
  readonly exited: Promise<SandboxResult>;
  /** Stops the process and everything it started; resolves once they are gone. Idempotent. */
  stop(): Promise<void>;
}

/** The sandbox cannot run here, or could not set up a run; the message names what to install or set. */
export class SandboxError extends Error {
  override name = 'SandboxError';
}

export const SANDBOX = token<Sandbox>('hoist.Sandbox');
