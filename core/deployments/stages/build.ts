import type { EntityManager } from '@mikro-orm/core';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { StageError } from '../../errors.js';
import { deterministicFailure } from '../../operations/stage-error.js';
import type { Archive } from '../../ports/archive.js';
import type { Builder } from '../../ports/builder.js';
import type { Clock } from '../../ports/clock.js';
import type { EnvironmentService } from '../../environment/environment-service.js';
import type { Storage } from '../../ports/storage.js';
import type { OperationState } from '../../operations/state-machine.js';
import type { Logger } from '../../tokens.js';
import { BuildLog } from '../build-log.js';
import type { BuildCaches, CacheReturn } from '../build-cache.js';
import type { LogChunks } from '../log-chunks.js';
import type { BuildRepository, BuildUpdate } from '../repositories/build-repository.js';
import type { Redaction } from '../redaction.js';
import { capMessage, type StageContext, type StageImpl, type StageResult } from '../stage-runner.js';
import { withWorkspace } from '../workspace.js';
import { fetchVersion, settingsOf, type Analysis } from './analyze.js';
import { deploymentTarget } from '../deployment-target.js';

/**
 * Build: unpacks the version in a fresh workspace, runs the builder, stores the artifact and the log.
 * A build that runs nothing (the builder says so) ships the checked upload itself as its artifact, with
 * the folder to serve as its root: nothing is unpacked, packed or stored. Every
 * log line and the error are redacted as they are written (Redaction): server paths named neutrally,
 * the values of the operation's environment masked. Under skip_build the stage does not run: when
 * Deploy starts, it packs the upload as is (`skipped`), so Deploy only ever ships a build.
 */
export class BuildStage implements StageImpl {
  constructor(
    private readonly builds: BuildRepository,
    private readonly storage: Storage,
    private readonly archive: Archive,
    private readonly builders: Builder[],
    private readonly environment: Pick<EnvironmentService, 'forBuild'>,
    private readonly dataDir: string,
    private readonly redaction: Pick<Redaction, 'forOperation'>,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly logChunks?: Pick<LogChunks, 'writer' | 'appendWithin'>,
    /** The accounts' build caches (BuildInput.cache); none without. */
    private readonly caches?: BuildCaches,
  ) {}

  async run(ctx: StageContext) {
    const { build, done, storeLog } = await this.produce(ctx, false);
    return {
      also: (tx: EntityManager) =>
        this.builds.within(tx).update(build, { ...done, status: 'succeeded', finished: true }),
      // Off the chain's path: the next stage can start meanwhile (the log is not_found until it is stored).
      after: storeLog,
    };
  }

  /**
   * The build of a site that builds nothing (its builder's outputWithoutBuild, judged on the file list Analyze read),
   * done in Analyze's claim: the upload is its artifact, and the build, its log lines and its success are written
   * with Analyze's success; its whole log is stored after that commit. Null when the builder has something to run;
   * a throw (the output directory missing, say) leaves the stage to run, and fail, on its own.
   */
  async inline(ctx: StageContext): Promise<StageResult | null> {
    const analysis = ctx.version.analysis as unknown as Analysis | null;
    const builder = analysis && this.builders.find((b) => b.supports(analysis));
    if (!analysis || !builder?.outputWithoutBuild || !ctx.files) return null;
    const lines = [buildingWith(builder, analysis)];
    const packed = shipsUpload(ctx, builder, analysis, ctx.files, (line) => lines.push(line));
    if (!packed) return null;
    const redactor = await this.redaction.forOperation(ctx.operation.id, ctx.project.id);
    const log = new BuildLog();
    for (const line of lines) log.line(redactor.text(line));
    const logKey = `logs/${ctx.operation.id}/build-${ctx.attempt}.log`;
    return {
      also: async (tx, t) => {
        if (t.state.stages.build.status !== 'succeeded') return;
        const build = await this.builds.within(tx).create({
          accountId: ctx.operation.accountId,
          projectId: ctx.project.id,
          versionId: ctx.version.id,
          operationId: ctx.operation.id,
          status: 'succeeded',
          logKey,
          ...packed,
          log: log.summary,
          finished: true,
        });
        await this.logChunks?.appendWithin(tx, ctx.operation.id, build, log.drain());
      },
      after: () => this.storeLog(logKey, log),
    };
  }

  async abandon(ctx: StageContext): Promise<void> {
    await this.builds.cancelRunning(ctx.operation.id);
  }

  /**
   * Packs the upload as the artifact of a skip_build operation, once; a redeploy ships the build it names, and a
   * promote ships none (Deploy resumes the release from what the deployer kept).
   */
  async skipped(ctx: StageContext): Promise<void> {
    const state = ctx.operation.state as unknown as OperationState;
    if (state.buildId || state.promote) return;
    if (await this.builds.shippable(ctx.operation.id)) return;
    await (await this.produce(ctx, true)).storeLog();
  }

  /**
   * Makes the version's artifact: with `skipCommands` the source tree (output directory applied) is
   * packed as is (skip_build). Returns the build's id (it is still `running` unless skipped), what its row is to get
   * when the stage succeeds (the artifact, the log's summary: written by then when skipped), and what stores its
   * whole log; a failed build's log is stored before it throws.
   */
  private async produce(
    ctx: StageContext,
    skipCommands: boolean,
  ): Promise<{ build: string; done: BuildUpdate; storeLog: () => Promise<void> }> {
    const analysis = ctx.version.analysis as unknown as Analysis | null;
    if (!analysis) throw new StageError('build_no_analysis', 'The version has no Analyze result; retry the operation');
    await this.builds.cancelRunning(ctx.operation.id);
    const logKey = `logs/${ctx.operation.id}/build-${ctx.attempt}.log`;
    const build = await this.builds.create({
      accountId: ctx.operation.accountId,
      projectId: ctx.project.id,
      versionId: ctx.version.id,
      operationId: ctx.operation.id,
      status: skipCommands ? 'skipped' : 'running',
      logKey,
    });
    let packed: Pick<BuildUpdate, 'artifactKey' | 'artifactRoot' | 'artifactSha256' | 'artifactSize'> = {};
    const log = new BuildLog();
    // A retried operation has its snapshot already; a first run's is taken just before the build runs.
    let redactor = await this.redaction.forOperation(ctx.operation.id, ctx.project.id);
    // The first lines wait with the rest of their second too: a build that ends sooner writes them once, at its end.
    let flushed = this.clock.now().getTime();
    let pending: NodeJS.Timeout | null = null;
    // The lines as written, for event streams in any process (LogChunks); a failed write is made up by the next.
    const chunks = this.logChunks?.writer(ctx.operation.id, build);
    const appendChunk = () => {
      if (pending) clearTimeout(pending);
      pending = null;
      return chunks
        ?.append(log.drain())
        .catch((err) => this.logger.warn({ err, buildId: build }, 'build log lines were not recorded yet'));
    };
    // At most about once a second, and a second after a line that came sooner (a build that then goes quiet).
    const flush = () => {
      flushed = this.clock.now().getTime();
      void appendChunk();
      // A missed write of the log so far is made up by the next one, and by the build's last.
      void this.builds
        .update(build, { log: { ...log.summary, lastLines: [...log.summary.lastLines] } })
        .catch((err) => this.logger.warn({ err, buildId: build }, 'the build log so far was not recorded'));
    };
    const write = (line: string) => {
      log.line(redactor.text(line));
      const now = this.clock.now().getTime();
      if (now - flushed > 1000) flush();
      else pending ??= setTimeout(flush, 1000);
    };
    try {
      await withWorkspace(
        this.dataDir,
        `build-${ctx.operation.id}`,
        async (dir) => {
          const { zip, manifest } = await fetchVersion(this.storage, this.archive, ctx, dir);
          const builder = skipCommands ? null : this.builders.find((b) => b.supports(analysis));
          if (builder === undefined)
            throw new StageError('build_unsupported', `No builder handles runtime ${analysis.runtime}`);
          if (builder) write(buildingWith(builder, analysis));
          // A build that runs nothing ships the upload, which is never unpacked here.
          const shipped =
            builder &&
            shipsUpload(
              ctx,
              builder,
              analysis,
              manifest.files.map((f) => f.path),
              write,
            );
          if (shipped) {
            packed = shipped;
            return;
          }
          const workspace = join(await dir(), 'src');
          const artifact = join(await dir(), 'artifact.zip');
          await this.archive.extract(zip, manifest, workspace, ctx.signal);
          let outputDir = join(workspace, analysis.outputDir);
          if (builder) {
            const env = await this.environment.forBuild(
              ctx.operation.id,
              ctx.project.id,
              deploymentTarget(ctx.version, ctx.operation),
            );
            redactor = await this.redaction.forOperation(ctx.operation.id, ctx.project.id);
            const caches = this.caches;
            const cache = caches && join(await dir(), 'cache');
            // Previews keep a cache of their own: code a preview built (anyone's with a preview upload URL) could
            // leave in it what a production build runs with the production values (an `npx pkg@1.2.3` it fills).
            const cacheOf =
              deploymentTarget(ctx.version, ctx.operation) === 'preview'
                ? `${ctx.operation.accountId}--preview`
                : ctx.operation.accountId;
            if (cache && ctx.version.options.clear_cache) {
              await caches.clear(cacheOf);
              write('Build cache: cleared (clear_cache): this build starts without one.');
            }
            if (cache && (await caches.take(cacheOf, cache)))
              write('Build cache: restored (what earlier builds of this account kept).');
            try {
              ({ outputDir } = await builder.build({
                workspace,
                detection: analysis,
                env,
                signal: ctx.signal,
                tenant: ctx.operation.accountId,
                log: write,
                redact: (text) => redactor.text(text),
                progress: (f) => ctx.progress(0.1 + 0.8 * f),
                ...(cache && { cache }),
              }));
            } finally {
              if (cache) {
                const kept = await caches.giveBack(cacheOf, cache).catch((err) => {
                  this.logger.warn({ err, buildId: build }, 'the build cache was not kept');
                  return null;
                });
                if (kept && (kept.bytes || !kept.kept)) write(cacheLine(kept, caches.maxBytes));
              }
            }
          }
          // skip_build packs the upload as it is: the folder it serves must be in it (a builder checks its own output).
          if (
            !builder &&
            !(await stat(outputDir).then(
              (s) => s.isDirectory(),
              () => false,
            ))
          )
            throw new StageError(
              'build_output_missing',
              `The upload has no output directory "${analysis.outputDir}" to deploy as it is (skip_build). ` +
                'Upload the built files, or check output_directory.',
            );
          await this.archive.pack(outputDir, artifact);
          // Shared only within the account: another account's deletion, or retention, never finds these bytes unused
          // while this build is storing them, and no account learns what another's builds made.
          const stored = await this.storage.putContentAddressed(
            `artifacts/${ctx.operation.accountId}`,
            createReadStream(artifact),
            { suffix: '.zip' },
          );
          write(`Artifact ${stored.key} (${stored.size} bytes)`);
          packed = { artifactKey: stored.key, artifactSha256: stored.sha256, artifactSize: stored.size };
          // A workspace that cannot be removed (tenant code made it deep or unreadable) is logged, never this build's
          // result: its success, failure or cancel stands.
        },
        this.logger,
      );
    } catch (err) {
      // Stopped from outside (a cancel, or the worker stopping) is not the build's failure.
      const stopped = ctx.signal.aborted;
      const e = err instanceof StageError ? err : deterministicFailure(err, 'build');
      write(
        stopped
          ? `Build stopped: ${ctx.signal.reason instanceof Error ? ctx.signal.reason.message : 'canceled'}`
          : `Build failed: ${e ? e.message : 'internal error'}`,
      );
      await appendChunk();
      await this.storeLog(logKey, log);
      const end = stopped
        ? { status: 'canceled' }
        : { status: 'failed', error: e ? { code: e.code, message: capMessage(redactor.text(e.message)) } : null };
      await this.builds.update(build, { ...end, log: log.summary, finished: true });
      throw err;
    }
    await appendChunk();
    const done = { ...packed, log: log.summary };
    if (skipCommands) await this.builds.update(build, { ...done, finished: true });
    return { build, done, storeLog: () => this.storeLog(logKey, log) };
  }

  private async storeLog(key: string, log: BuildLog): Promise<void> {
    await this.storage
      .put(key, Readable.from([log.text()]))
      .catch((err) => this.logger.warn({ err, key }, 'the build log was not stored; its summary stays on the build'));
  }
}

/** The first line of a build's log. */
const buildingWith = (builder: Builder, analysis: Analysis) =>
  `Building with ${builder.id} (${analysis.runtime}${analysis.framework ? `, ${analysis.framework}` : ''})`;

/**
 * What a build ships when `builder` has nothing to run for `files` (its outputWithoutBuild): the checked upload as
 * it is, nothing packed or stored, the release rooted at the folder it names; its lines go to `write`. Null when the
 * builder has something to run.
 */
function shipsUpload(
  ctx: StageContext,
  builder: Builder,
  analysis: Analysis,
  files: string[],
  write: (line: string) => void,
): Pick<BuildUpdate, 'artifactKey' | 'artifactRoot' | 'artifactSha256' | 'artifactSize'> | null {
  const direct = builder.outputWithoutBuild?.({ detection: analysis, files, log: write }) ?? null;
  if (direct === null) return null;
  const packed = uploadAsArtifact(ctx, direct);
  const folder = packed.artifactRoot ? `, folder ${packed.artifactRoot}` : '';
  write(`Artifact: the upload ${packed.artifactKey}${folder} (${packed.artifactSize} bytes), as it is`);
  return packed;
}

/**
 * The artifact of a build that runs nothing: the upload itself, with the folder `direct` (under the
 * version's root directory) as the release's root, in the form Archive.inspect takes as `rootDirectory`.
 */
function uploadAsArtifact(
  ctx: StageContext,
  direct: string,
): Pick<BuildUpdate, 'artifactKey' | 'artifactRoot' | 'artifactSha256' | 'artifactSize'> {
  const segments = [
    ...String(settingsOf(ctx).root_directory ?? '')
      .trim()
      .split('/'),
    ...direct.split('/'),
  ];
  const root = segments.filter((s) => s !== '' && s !== '.').join('/');
  return {
    artifactKey: ctx.version.archiveKey,
    artifactRoot: root || null,
    artifactSha256: ctx.version.archiveSha256,
    artifactSize: ctx.version.archiveSize,
  };
}

/** The build log's line on what became of the build's cache (`max`: the most it may hold, bytes). */
function cacheLine(r: CacheReturn, max: number): string {
  const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
  if (r.kept) return `Build cache: kept for the next build (${mib(r.bytes)}).`;
  if (r.why === 'too_large') return `Build cache: not kept, over ${mib(max)} (HOIST_BUILD_CACHE_MB).`;
  if (r.why === 'newer_kept') return 'Build cache: not kept; another build of this account kept its own first.';
  return 'Build cache: not kept; it held something other than folders and regular files.';
}
