import { token } from '../tokens.js';

/**
 * Where the edge sends a live release's traffic: files under a directory, or an HTTP address (`url`), which on this
 * host may also be reached at the unix socket `socket`; the edge then uses the socket (see SandboxService.socket).
 */
export type ReleaseTarget = { kind: 'static'; root: string } | { kind: 'http'; url: string; socket?: string };

/** A release to run: one deployment of a built artifact. */
export interface ReleaseSpec {
  deploymentId: string;
  /** The account whose release it is: the tenant of its sandbox (SandboxRun.tenant). */
  accountId: string;
  projectId: string;
  slug: string;
  runtime: 'static' | 'node';
  /** Storage key of the artifact (a ZIP of the build output, or the upload itself when nothing was built). */
  artifactKey: string;
  /**
   * The folder of the artifact to take as the release's root (Archive.inspect's `rootDirectory`);
   * absent for the whole artifact. Deployers unpack only that folder.
   */
  artifactRoot?: string;
  startCommand: string | null;
  /** Runtime environment variables. */
  env: Record<string, string>;
}

/**
 * What a deployer tells core about a release once `prepare` or `restore` has made it ready; core
 * records it on the deployment (masking server paths and the release's secrets in what it stores).
 * Core passes the same object to every call. Each method resolves once recorded and never rejects.
 */
export interface ReleaseReports {
  /** The release answers at a new address now (it was restarted after a crash, or brought back by `restore`). */
  targetChanged(deploymentId: string, target: ReleaseTarget): Promise<void>;
  /**
   * The release kept crashing and was stopped for good: core marks it failed (`deploy_crash_loop`).
   * `summary` says how (`The app crashed 5 times within a minute and was stopped.`); `lastLines`
   * are the last lines it printed.
   */
  exited(deploymentId: string, summary: string, lastLines: string[]): Promise<void>;
  /** `restore` could not bring the release back (`reason` says why): core marks it failed (`deploy_restore_failed`). */
  failed(deploymentId: string, reason: string): Promise<void>;
}

/** What `prepare` gets from core besides the spec. */
export interface PrepareControl {
  /** Aborted when the deploy is canceled. */
  signal: AbortSignal;
  /** A line of the deploy's progress. */
  log(line: string): void;
  /** Where to report what becomes of the release after `prepare` returned (a new address, a crash loop). */
  report: ReleaseReports;
}

/** The most lines of a release's log one read answers (Deployer.logs). */
export const RELEASE_LOG_LINES_MAX = 1000;

/**
 * Runs releases. Plugins: `deployer-local` (release directories and child processes on this
 * machine), `deployer-docker`, `deployer-pulumi`. The route switch itself is core's: the deployer
 * only makes a release ready and takes it down.
 */
export interface Deployer {
  /**
   * Makes the release ready to take traffic (unpacked, started, healthy) and returns where the edge
   * sends it. Throws a StageError with a `deploy_*` code when it cannot; what it made is
   * removed then. Honours `signal` (cancel): stops and removes what it made, and rejects.
   */
  prepare(spec: ReleaseSpec, control: PrepareControl): Promise<ReleaseTarget>;
  /** Stops and removes a release's resources; idempotent. */
  remove(deploymentId: string): Promise<void>;
  /**
   * Stops a superseded release (its process or container) but keeps what `resume` needs to start it
   * again (deployer-local: its release directory; docker: its image); idempotent. Optional: a deployer
   * without it (and `resume`) has its superseded releases removed, and they cannot be promoted.
   */
  suspend?(deploymentId: string): Promise<void>;
  /**
   * Makes a release `prepare` made earlier ready again from what `suspend` kept, without unpacking or
   * building, and returns where the edge sends it (a static release: its directory at once). Throws a
   * StageError `deploy_release_gone` when nothing is kept any more, or a `deploy_*` code as `prepare` does.
   * Honours `signal` like `prepare`. Optional, with `suspend`.
   */
  resume?(spec: ReleaseSpec, control: PrepareControl): Promise<ReleaseTarget>;
  /**
   * Brings back live releases after a restart (processes, containers); static releases may be no-ops.
   * Reports the address of each it brought back (`targetChanged`) and each it could not (`failed`).
   */
  restore(specs: ReleaseSpec[], report: ReleaseReports): Promise<void>;
  /**
   * Frees what no release uses any more and may still be on the deployer's disk (deployer-local: blobs of its
   * file store that no release links to). Optional; the worker calls it periodically. Resolves to how many
   * items it removed.
   */
  collectGarbage?(): Promise<number>;
  /**
   * The deployment ids of the releases running now on what this deployer runs them on, whoever started them
   * (deployer-docker: every running container labelled `hoist.managed=true`, of any Hoist sharing the engine).
   * Core stops those whose deployment ended (Retirement), so that a release a restart left running does not
   * run forever. Optional: without it, a replaced release is stopped only by the Deploy stage's drain timer.
   */
  runningReleases?(): Promise<string[]>;
  /**
   * The last `limit` lines (at most RELEASE_LOG_LINES_MAX) a Node.js release printed (stdout and stderr), oldest
   * first, each with when it was printed, from any process of this deployer's (not only the one running it); a
   * release stopped since keeps its lines until it is removed. Null when nothing is kept for it (a static release,
   * one removed or never started). Optional: without it, no release has a log.
   */
  logs?(deploymentId: string, limit: number): Promise<ReleaseLogLine[] | null>;
}

/** A line a release printed, and when (an ISO 8601 time). */
export interface ReleaseLogLine {
  at: string;
  text: string;
}

export const DEPLOYER = token<Deployer>('hoist.Deployer');
