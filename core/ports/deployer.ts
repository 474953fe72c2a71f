import type { ReleaseTarget } from '../entities/deployment.js';

/** A release to run: one deployment of a built artifact. */
export interface ReleaseSpec {
  deploymentId: string;
  projectId: string;
  slug: string;
  runtime: 'static' | 'node';
  /** Storage key of the artifact (a ZIP of the build output). */
  artifactKey: string;
  startCommand: string | null;
  /** Runtime environment variables. */
  env: Record<string, string>;
}

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
  prepare(spec: ReleaseSpec, control: { signal: AbortSignal; log(line: string): void }): Promise<ReleaseTarget>;
  /** Stops and removes a release's resources; idempotent. */
  remove(deploymentId: string): Promise<void>;
  /** Brings back live releases after a restart (processes, containers); static releases may be no-ops. */
  restore(specs: ReleaseSpec[]): Promise<void>;
}

export const DEPLOYER = Symbol.for('hoist.Deployer');
