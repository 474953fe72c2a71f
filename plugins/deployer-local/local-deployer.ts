import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { StageError } from '../../core/errors.js';
import type { Lifecycle } from '../../core/plugin.js';
import type { Archive } from '../../core/ports/archive.js';
import type {
  Deployer,
  PrepareControl,
  ReleaseReports,
  ReleaseSpec,
  ReleaseTarget,
} from '../../core/ports/deployer.js';
import type { Storage } from '../../core/ports/storage.js';
import type { Sandbox } from '../../core/ports/sandbox.js';
import type { Workspaces } from '../../core/ports/workspaces.js';
import { fetchArtifact } from '../shared/release/unpack-artifact.js';
import { BlobStore } from '../shared/release/blob-store.js';
import { KnownVariantsMemory } from '../shared/release/known-variants.js';
import {
  readFileIndex,
  saveFileIndex,
  storeReleaseFiles,
  unlinkReleaseFiles,
} from '../shared/release/release-files.js';
import { fileIndexPath, variantsDir, variantsPack } from '../../core/ports/file-index.js';
import { directStart } from '../shared/release/npm-start.js';
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
 * `<dataDir>/releases/<deploymentId>`, unpacked beside it and renamed into place in one step, whose files are
 * hard links to the content-addressed store `<dataDir>/blobs` (each content written once; read-only). A
 * static release is served from it by the edge; a Node.js release runs from it, read-only, in the
 * sandbox, with its port published on the host's loopback for the edge alone (restarted with
 * backoff after a crash, reported at its new address; a crash loop is reported and ends it). Its
 * `npm start` runs the start script without npm when npm would do nothing more (directStart). A static release
 * copies the precompressed variants of files it shares with a release stored lately out of that one's pack.
 */
export class LocalDeployer implements Deployer, Lifecycle {
  private readonly running = new Map<string, Supervisor>();
  private readonly store: BlobStore;
  private readonly variants = new KnownVariantsMemory();

  constructor(
    private readonly workspaces: Workspaces,
    private readonly storage: Storage,
    private readonly archive: Archive,
    private readonly sandbox: Sandbox,
    private readonly opts: LocalDeployerOptions,
  ) {
    this.store = new BlobStore(join(opts.dataDir, 'blobs'));
  }

  private dir(deploymentId: string): string {
    return join(this.opts.dataDir, 'releases', deploymentId);
  }

  async prepare(spec: ReleaseSpec, control: PrepareControl): Promise<ReleaseTarget> {
    if (spec.runtime === 'node' && !spec.startCommand)
      throw new StageError(
        'deploy_no_start_command',
        'The release has no start command; set start_command in the project settings',
      );
    const root = this.dir(spec.deploymentId);
    await mkdir(join(this.opts.dataDir, 'releases'), { recursive: true });
    await this.workspaces.run(`deploy-${spec.deploymentId}`, async (work) => {
      const staging = join(work, 'release');
      const deps = { storage: this.storage, archive: this.archive };
      const { zip, manifest } = await fetchArtifact(deps, spec.artifactKey, work, control.signal, spec.artifactRoot);
      // Each file becomes a link to its blob; a static release also gets its index and its pack of precompressed
      // variants, beside it.
      const precompress = spec.runtime === 'static';
      const files = (fn: Parameters<Archive['each']>[2]) => this.archive.each(zip, manifest, fn, control.signal);
      const index = await storeReleaseFiles(this.store, staging, files, {
        precompress,
        signal: control.signal,
        finalRoot: root,
        known: (sha) => this.variants.get(sha),
      });
      await this.removeFiles(root);
      if (precompress) await rename(variantsPack(staging), variantsPack(root));
      await saveFileIndex(root, index);
      await rename(staging, root);
      // Only what a redeploy may copy instead of compressing: the release is in place whether or not it is learnt.
      if (precompress) await this.variants.learn(index, variantsPack(root)).catch(() => {});
    });
    control.log(`Release ${spec.deploymentId} unpacked`);
    if (spec.runtime === 'static') return { kind: 'static', root };
    try {
      return await this.run(spec, root, control.report, control.signal);
    } catch (err) {
      await this.discard(root);
      throw err;
    }
  }

  async remove(deploymentId: string): Promise<void> {
    await this.running.get(deploymentId)?.stop();
    this.running.delete(deploymentId);
    await this.discard(this.dir(deploymentId));
  }

  async suspend(deploymentId: string): Promise<void> {
    await this.running.get(deploymentId)?.stop();
    this.running.delete(deploymentId);
  }

  async resume(spec: ReleaseSpec, control: PrepareControl): Promise<ReleaseTarget> {
    const root = this.dir(spec.deploymentId);
    if (!(await stat(fileIndexPath(root)).catch(() => null)))
      throw new StageError('deploy_release_gone', `Release ${spec.deploymentId} is no longer kept on this server`);
    control.log(`Release ${spec.deploymentId} resumed from its directory`);
    if (spec.runtime === 'static') return { kind: 'static', root };
    if (!spec.startCommand)
      throw new StageError('deploy_no_start_command', 'The release has no start command; it cannot be started again');
    await this.suspend(spec.deploymentId);
    return this.run(spec, root, control.report, control.signal);
  }

  /** Removes the blobs no release links to any more (after a grace period); returns how many. */
  async collectGarbage(): Promise<number> {
    return this.store.collect();
  }

  /** Removes a release's files and the blobs only it used (the worker's periodic collection catches any other). */
  private async discard(root: string): Promise<void> {
    const index = await readFileIndex(root).catch(() => null);
    const variants = index ? await unlinkReleaseFiles(this.store, root, index) : [];
    await this.removeFiles(root);
    await this.store.release(variants);
  }

  /** Removes a release's directory, index and variants (a pack, or a folder of links before packs; not its blobs). */
  private async removeFiles(root: string): Promise<void> {
    const remove = (path: string) => rm(path, { recursive: true, force: true });
    // The index last, as before: what names the release's blobs outlives its files.
    await Promise.all([root, variantsPack(root), variantsDir(root)].map(remove));
    await remove(fileIndexPath(root));
  }

  async restore(specs: ReleaseSpec[], report: ReleaseReports): Promise<void> {
    for (const spec of specs) {
      if (spec.runtime !== 'node' || this.running.has(spec.deploymentId) || !spec.startCommand) continue;
      const root = this.dir(spec.deploymentId);
      if (!(await stat(root).catch(() => null))) continue;
      const target = await this.run(spec, root, report).catch((err: Error) => err);
      if (target instanceof Error) await report.failed(spec.deploymentId, target.message);
      else await report.targetChanged(spec.deploymentId, target);
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.running.values()].map((s) => s.stop()));
    this.running.clear();
  }

  private async run(
    spec: ReleaseSpec,
    root: string,
    report: ReleaseReports,
    signal?: AbortSignal,
  ): Promise<ReleaseTarget> {
    const env = { NODE_ENV: 'production', ...spec.env };
    const supervisor = new Supervisor(
      this.sandbox,
      {
        command: await directStart(spec.startCommand!, root, env),
        workspace: root,
        env: { ...env, NODE_OPTIONS: nodeHeapCap(env, this.opts.memoryMb) },
        network: 'egress',
        port: RELEASE_PORT,
        limits: {
          memoryMb: this.opts.memoryMb,
          processes: this.opts.processes,
          outputBytes: Number.MAX_SAFE_INTEGER,
          diskMb: this.opts.diskMb,
        },
      },
      {
        crashLoop: (lines) => {
          this.running.delete(spec.deploymentId);
          void report.exited(spec.deploymentId, 'The app crashed 5 times within a minute and was stopped.', lines);
        },
        restarted: (url) => void report.targetChanged(spec.deploymentId, { kind: 'http', url }),
      },
    );
    try {
      const url = await supervisor.start(this.opts.healthTimeoutMs, signal);
      this.running.set(spec.deploymentId, supervisor);
      return { kind: 'http', url };
    } catch (err) {
      const tail = supervisor.lines.slice(-20).join('\n');
      const message = `The app ${(err as Error).message}. ${tail ? `Last lines:\n${tail}` : 'It printed nothing.'}`;
      throw new StageError(signal?.aborted ? 'deploy_canceled' : 'deploy_unhealthy', message, {
        last_lines: supervisor.lines.slice(-20),
      });
    }
  }
}
