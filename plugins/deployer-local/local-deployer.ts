import type { EntityManager } from '@mikro-orm/core';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Redactor } from '../../core/deployments/redaction.js';
import { download, withWorkspace } from '../../core/deployments/workspace.js';
import { Deployment, type ReleaseTarget } from '../../core/entities/deployment.js';
import { StageError } from '../../core/operations/stage-error.js';
import type { Lifecycle } from '../../core/plugin.js';
import type { Archive } from '../../core/ports/archive.js';
import type { Deployer, ReleaseSpec } from '../../core/ports/deployer.js';
import type { Storage } from '../../core/ports/storage.js';
import type { Sandbox } from '../../core/ports/sandbox.js';
import { nodeHeapCap } from '../shared/sandbox/run-tenant.js';
import { Supervisor } from './supervisor.js';

/** The port a release listens on inside its sandbox (it gets it as PORT). */
const RELEASE_PORT = 8080;

export interface LocalDeployerOptions {
  dataDir: string;
  /** Memory of a Node.js release, MiB (its heap cap is three quarters of it). */
  memoryMb: number;
  /** Processes and threads of a release. */
  processes: number;
  /** Disk a release may write (HOME, /tmp), MiB. */
  diskMb: number;
  /** How long a Node.js release has to answer HTTP before its deploy fails. */
  healthTimeoutMs: number;
}

/**
 * Runs releases on this machine. Every release is an immutable directory
 * `<dataDir>/releases/<deploymentId>`, unpacked beside it and renamed into place in one step. A
 * static release is served from it by the edge; a Node.js release runs from it, read-only, in the
 * sandbox, with its port published on the host's loopback for the edge alone (restarted with
 * backoff after a crash; a crash loop marks the deployment failed).
 */
export class LocalDeployer implements Deployer, Lifecycle {
  private readonly running = new Map<string, Supervisor>();

  constructor(
    private readonly em: EntityManager,
    private readonly storage: Storage,
    private readonly archive: Archive,
    private readonly sandbox: Sandbox,
    private readonly opts: LocalDeployerOptions,
  ) {}

  private dir(deploymentId: string): string {
    return join(this.opts.dataDir, 'releases', deploymentId);
  }

  async prepare(spec: ReleaseSpec, control: { signal: AbortSignal; log(line: string): void }): Promise<ReleaseTarget> {
    if (spec.runtime === 'node' && !spec.startCommand) throw new StageError('deploy_no_start_command', 'The release has no start command; set start_command in the project settings', false);
    const root = this.dir(spec.deploymentId);
    await mkdir(join(this.opts.dataDir, 'releases'), { recursive: true });
    await withWorkspace(this.opts.dataDir, `deploy-${spec.deploymentId}`, async (work) => {
      const zip = join(work, 'artifact.zip');
      await download(this.storage, spec.artifactKey, zip, control.signal);
      const manifest = await this.archive.inspect(zip, {});
      const staging = join(work, 'release');
      await this.archive.extract(zip, manifest, staging, control.signal);
      await rm(root, { recursive: true, force: true });
      await rename(staging, root);
    });
    control.log(`Release ${spec.deploymentId} unpacked`);
    if (spec.runtime === 'static') return { kind: 'static', root };
    try {
      return await this.run(spec, root, control.signal);
    } catch (err) {
      await rm(root, { recursive: true, force: true });
      throw err;
    }
  }

  async remove(deploymentId: string): Promise<void> {
    await this.running.get(deploymentId)?.stop();
    this.running.delete(deploymentId);
    await rm(this.dir(deploymentId), { recursive: true, force: true });
  }

  async restore(specs: ReleaseSpec[]): Promise<void> {
    for (const spec of specs) {
      if (spec.runtime !== 'node' || this.running.has(spec.deploymentId) || !spec.startCommand) continue;
      const root = this.dir(spec.deploymentId);
      if (!(await stat(root).catch(() => null))) continue;
      try {
        const target = await this.run(spec, root);
        await this.em.fork().nativeUpdate(Deployment, { id: spec.deploymentId }, { target });
      } catch (err) {
        await this.markFailed(spec.deploymentId, 'deploy_restore_failed', `The release did not come back after a restart: ${(err as StageError).message}`);
      }
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.running.values()].map((s) => s.stop()));
    this.running.clear();
  }

  private async run(spec: ReleaseSpec, root: string, signal?: AbortSignal): Promise<ReleaseTarget> {
    const env = { NODE_ENV: 'production', ...spec.env };
    const supervisor = new Supervisor(
      this.sandbox,
      {
        command: spec.startCommand!,
        workspace: root,
        env: { ...env, NODE_OPTIONS: nodeHeapCap(env, this.opts.memoryMb) },
        network: 'egress',
        port: RELEASE_PORT,
        limits: { memoryMb: this.opts.memoryMb, processes: this.opts.processes, outputBytes: Number.MAX_SAFE_INTEGER, diskMb: this.opts.diskMb },
      },
      {
        crashLoop: (lines) => {
          this.running.delete(spec.deploymentId);
          // Stored masked: the lines may print the release's environment (the API masks on the way out too).
          const tail = new Redactor(null, Object.values(spec.env)).text(lines.slice(-20).join('\n'));
          void this.markFailed(spec.deploymentId, 'deploy_crash_loop', `The app crashed 5 times within a minute and was stopped. Last lines:\n${tail}`);
        },
        restarted: (url) => {
          void this.em.fork().nativeUpdate(Deployment, { id: spec.deploymentId }, { target: { kind: 'http', url } });
        },
      },
    );
    try {
      const url = await supervisor.start(this.opts.healthTimeoutMs, signal);
      this.running.set(spec.deploymentId, supervisor);
      return { kind: 'http', url };
    } catch (err) {
      const tail = supervisor.lines.slice(-20).join('\n');
      const message = `The app ${(err as Error).message}. ${tail ? `Last lines:\n${tail}` : 'It printed nothing.'}`;
      throw new StageError(signal?.aborted ? 'deploy_canceled' : 'deploy_unhealthy', message, true, { last_lines: supervisor.lines.slice(-20) });
    }
  }

  private async markFailed(deploymentId: string, code: string, message: string): Promise<void> {
    await this.em.fork().nativeUpdate(Deployment, { id: deploymentId }, { status: 'failed', error: { code, message }, endedAt: new Date() }).catch(() => {});
  }
}
