import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { StageError } from '../../core/errors.js';
import type { Lifecycle, Logger } from '../../core/plugin.js';
import type { Archive } from '../../core/ports/archive.js';
import type {
  Deployer,
  ReleaseLogLine,
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
  addReleaseVariants,
  readFileIndex,
  saveFileIndex,
  storeReleaseFiles,
  unlinkReleaseFiles,
} from '../shared/release/release-files.js';
import { fileIndexPath, variantsDir, variantsPack, type FileIndex } from '../../core/ports/file-index.js';
import { directStart } from '../shared/release/npm-start.js';
import { nodeHeapCap } from '../shared/sandbox/run-tenant.js';
import { addSiteRules, checkSiteRuleSize, isSiteRuleFile, type SiteRules } from '../shared/release/site-rules.js';
import { ReleaseLog, readReleaseLog, removeReleaseLog } from '../shared/release/release-log.js';
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
  /** Where a static release whose variants could not be made is reported. */
  log?: Pick<Logger, 'warn'>;
}

/**
 * Runs releases on this machine. Every release is an immutable directory
 * `<dataDir>/releases/<deploymentId>`, unpacked beside it and renamed into place in one step, whose files are
 * hard links to a content-addressed store (each content written once; read-only): `<dataDir>/blobs`, shared by every
 * static release, and `<dataDir>/project-blobs/<projectId>` for the releases that run tenant code (a Node.js app can
 * read its files' link counts: in a shared store a count would tell it that another account holds the same bytes). A
 * static release is served from it by the edge; a Node.js release runs from it, read-only, in the
 * sandbox, with its port published on the host's loopback for the edge alone, and with sandbox bwrap also behind a
 * unix socket only Hoist opens, which the edge proxies to instead (restarted with
 * backoff after a crash, reported at its new address; a crash loop is reported and ends it). Its
 * `npm start` runs the start script without npm when npm would do nothing more (directStart). A static release
 * is ready, and goes live, before its precompressed variants are made: they follow in the background (its index
 * says so until they are there; the edge serves its files as they are meanwhile), copied out of the pack of a
 * release stored lately for files the two share.
 */
export class LocalDeployer implements Deployer, Lifecycle {
  private readonly running = new Map<string, Supervisor>();
  /** The output of the releases this process runs, by deployment id (kept while they run). */
  private readonly releaseLogs = new Map<string, ReleaseLog>();
  private readonly store: BlobStore;
  /** The stores of projects' releases that run tenant code, by project id (see the class). */
  private readonly projectStores = new Map<string, BlobStore>();
  private readonly variants = new KnownVariantsMemory();
  /** Static releases whose variants are being made or wait their turn, by deployment id. */
  private readonly compressing = new Map<string, { abort: AbortController; done: Promise<void>; started: boolean }>();
  /**
   * The last release's variants in line: one release's at a time (each fills the libuv pool, which the edge's and
   * storage's file reads share), as when they were made inside the Deploy stage.
   */
  private compressionLine: Promise<void> = Promise.resolve();

  constructor(
    private readonly workspaces: Workspaces,
    private readonly storage: Storage,
    private readonly archive: Archive,
    private readonly sandbox: Sandbox,
    private readonly opts: LocalDeployerOptions,
  ) {
    this.store = new BlobStore(join(opts.dataDir, 'blobs'));
  }

  /** The blob store of a release's files: the shared one, or the project's own (FileIndex.blobStore). */
  private storeOf(projectId: string | undefined): BlobStore {
    if (!projectId) return this.store;
    let store = this.projectStores.get(projectId);
    if (!store) this.projectStores.set(projectId, (store = new BlobStore(join(this.projectBlobs(), projectId))));
    return store;
  }

  private projectBlobs(): string {
    return join(this.opts.dataDir, 'project-blobs');
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
    let index: FileIndex;
    // The gzip variants the artifact has ready (its own deflate streams), for a static release's compressLater.
    const gzip = spec.runtime === 'static' ? new Map<string, Buffer>() : undefined;
    await this.workspaces.run(`deploy-${spec.deploymentId}`, async (work) => {
      const staging = join(work, 'release');
      const deps = { storage: this.storage, archive: this.archive };
      const { zip, manifest } = await fetchArtifact(deps, spec.artifactKey, work, control.signal, spec.artifactRoot);
      // A static site's _redirects and _headers are checked as they go by: a refused one stops the release before
      // it is stored.
      const rules: SiteRules = {};
      const site = spec.runtime === 'static';
      if (site) for (const f of manifest.files) if (isSiteRuleFile(f.path)) checkSiteRuleSize(f.path, f.size);
      // Each file becomes a link to its blob; the release's index goes beside it (a static release's marked as
      // waiting for its variants).
      const files = (fn: Parameters<Archive['each']>[2]) =>
        this.archive.each(
          zip,
          manifest,
          (file) => {
            if (site && isSiteRuleFile(file.path)) addSiteRules(rules, file.path, file.data, file.size);
            return fn(file);
          },
          control.signal,
        );
      const blobStore = site ? undefined : spec.projectId;
      const store = this.storeOf(blobStore);
      index = await storeReleaseFiles(store, staging, files, { precompress: false, signal: control.signal, gzip });
      await this.removeFiles(root);
      if (site) index = { ...index, ...rules, variantsPending: Date.now() };
      else index = { ...index, blobStore };
      await saveFileIndex(root, index);
      await rename(staging, root);
    });
    control.log(`Release ${spec.deploymentId} unpacked`);
    if (spec.runtime === 'static') {
      this.compressLater(spec.deploymentId, root, index!, gzip);
      return { kind: 'static', root };
    }
    try {
      return await this.run(spec, root, control.report, control.signal);
    } catch (err) {
      await this.discard(root);
      throw err;
    }
  }

  /**
   * Makes the precompressed variants of the static release `id` at `root`, in place and serving, in the background
   * (after those of the releases before it): its pack, then its index without `variantsPending`. When that fails
   * the index loses the mark all the same (readers stop looking; its files are served as they are). remove() and
   * stop() abort it, and wait for it once it has started. `gzip`: the gzip variants ready (storeReleaseFiles').
   */
  private compressLater(id: string, root: string, index: FileIndex, gzip?: ReadonlyMap<string, Buffer>): void {
    const abort = new AbortController();
    const work = { abort, done: Promise.resolve(), started: false };
    const done = this.compressionLine.then(async () => {
      if (abort.signal.aborted) return;
      work.started = true;
      try {
        const full = await addReleaseVariants(root, index, {
          signal: abort.signal,
          known: (sha) => this.variants.get(sha),
          gzip,
        });
        abort.signal.throwIfAborted();
        await saveFileIndex(root, full);
        // Only what a redeploy may copy instead of compressing: the variants are there whether or not it is learnt.
        await this.variants.learn(full, variantsPack(root)).catch(() => {});
      } catch (err) {
        if (abort.signal.aborted) return;
        this.opts.log?.warn({ err, deploymentId: id }, 'the precompressed variants of a release were not made');
        const { variantsPending: _, ...plain } = index;
        await saveFileIndex(root, plain).catch(() => {});
      }
    });
    this.compressionLine = done;
    work.done = done.finally(() => this.compressing.delete(id));
    this.compressing.set(id, work);
  }

  /** Makes the variants of static release `id` again when a stop cut them off (its index still waits for them). */
  private async compressPending(id: string): Promise<void> {
    const root = this.dir(id);
    const index = await readFileIndex(root).catch(() => null);
    if (!index || index.variantsPending === undefined || this.compressing.has(id)) return;
    // What the stopped run had written of its pack, if anything, is no one's.
    await rm(variantsPack(root), { force: true });
    this.compressLater(id, root, index);
  }

  /** Resolves once the variants of release `id` are made, or it has none to make (tests and benchmarks wait here). */
  async variantsMade(id: string): Promise<void> {
    await this.compressing.get(id)?.done;
  }

  /** Stops making the variants of release `id`, and waits until that has stopped (one still in line never starts). */
  private async stopCompressing(id: string): Promise<void> {
    const work = this.compressing.get(id);
    work?.abort.abort();
    if (work?.started) await work.done;
  }

  async remove(deploymentId: string): Promise<void> {
    await this.stopCompressing(deploymentId);
    await this.suspend(deploymentId);
    await this.discard(this.dir(deploymentId));
  }

  async suspend(deploymentId: string): Promise<void> {
    await this.running.get(deploymentId)?.stop();
    this.running.delete(deploymentId);
    await this.releaseLogs.get(deploymentId)?.close();
    this.releaseLogs.delete(deploymentId);
  }

  async logs(deploymentId: string, limit: number): Promise<ReleaseLogLine[] | null> {
    if (!/^[\w-]{1,64}$/.test(deploymentId)) return null;
    await this.releaseLogs.get(deploymentId)?.flush();
    return readReleaseLog(this.logPath(deploymentId), limit);
  }

  /** Where the output of release `deploymentId` is kept (ReleaseLog), beside the releases, outside their folders. */
  private logPath(deploymentId: string): string {
    return join(this.opts.dataDir, 'release-logs', `${deploymentId}.log`);
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

  /** Removes the blobs no release links to any more (after a grace period), in every store; returns how many. */
  async collectGarbage(): Promise<number> {
    let removed = await this.store.collect();
    for (const project of await readdir(this.projectBlobs()).catch(() => [] as string[]))
      removed += await this.storeOf(project).collect();
    return removed;
  }

  /** Removes a release's files and the blobs only it used (the worker's periodic collection catches any other). */
  private async discard(root: string): Promise<void> {
    const index = await readFileIndex(root).catch(() => null);
    const store = this.storeOf(index?.blobStore);
    const variants = index ? await unlinkReleaseFiles(store, root, index) : [];
    await this.removeFiles(root);
    await store.release(variants);
    await removeReleaseLog(this.logPath(basename(root)));
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
      if (spec.runtime === 'static') await this.compressPending(spec.deploymentId);
      if (spec.runtime !== 'node' || this.running.has(spec.deploymentId) || !spec.startCommand) continue;
      const root = this.dir(spec.deploymentId);
      if (!(await stat(root).catch(() => null))) continue;
      const target = await this.run(spec, root, report).catch((err: Error) => err);
      if (target instanceof Error) await report.failed(spec.deploymentId, target.message);
      else await report.targetChanged(spec.deploymentId, target);
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.compressing.keys()].map((id) => this.stopCompressing(id)));
    await Promise.all([...this.running.values()].map((s) => s.stop()));
    this.running.clear();
    await Promise.all([...this.releaseLogs.values()].map((l) => l.close()));
    this.releaseLogs.clear();
  }

  private async run(
    spec: ReleaseSpec,
    root: string,
    report: ReleaseReports,
    signal?: AbortSignal,
  ): Promise<ReleaseTarget> {
    const env = { NODE_ENV: 'production', ...spec.env };
    await mkdir(join(this.opts.dataDir, 'release-logs'), { recursive: true, mode: 0o700 });
    const log = new ReleaseLog(this.logPath(spec.deploymentId));
    const supervisor = new Supervisor(
      this.sandbox,
      {
        command: await directStart(spec.startCommand!, root, env),
        workspace: root,
        env: { ...env, NODE_OPTIONS: nodeHeapCap(env, this.opts.memoryMb) },
        network: 'egress',
        tenant: spec.accountId,
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
          void log.close();
          void report.exited(spec.deploymentId, 'The app crashed 5 times within a minute and was stopped.', lines);
        },
        restarted: (target) => void report.targetChanged(spec.deploymentId, target),
        output: (line) => log.line(line),
      },
    );
    await this.releaseLogs.get(spec.deploymentId)?.close();
    this.releaseLogs.set(spec.deploymentId, log);
    try {
      const target = await supervisor.start(this.opts.healthTimeoutMs, signal);
      this.running.set(spec.deploymentId, supervisor);
      return target;
    } catch (err) {
      // Its output stays on disk until the release is removed (a failed prepare removes it at once).
      await log.close();
      if (this.releaseLogs.get(spec.deploymentId) === log) this.releaseLogs.delete(spec.deploymentId);
      const tail = supervisor.lines.slice(-20).join('\n');
      const message = `The app ${(err as Error).message}. ${tail ? `Last lines:\n${tail}` : 'It printed nothing.'}`;
      throw new StageError(signal?.aborted ? 'deploy_canceled' : 'deploy_unhealthy', message, {
        last_lines: supervisor.lines.slice(-20),
      });
    }
  }
}
