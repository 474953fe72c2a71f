import type { EntityManager } from '@mikro-orm/core';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Build } from '../../entities/build.js';
import { deterministicFailure, StageError } from '../../operations/stage-error.js';
import type { Archive } from '../../ports/archive.js';
import type { Builder } from '../../ports/builder.js';
import type { EnvironmentService } from '../../environment/environment-service.js';
import type { Storage } from '../../ports/storage.js';
import { BuildLog } from '../build-log.js';
import type { Redaction } from '../redaction.js';
import type { StageContext, StageImpl } from '../stage-runner.js';
import { withWorkspace } from '../workspace.js';
import { fetchVersion, type Analysis } from './analyze.js';

/**
 * Build: unpacks the version in a fresh workspace, runs the builder, stores the artifact and the log.
 * A build that runs nothing (the builder says so) packs its artifact from the upload instead. Every
 * log line and the error are redacted as they are written (Redaction): server paths named neutrally,
 * the values of the operation's environment masked.
 */
export class BuildStage implements StageImpl {
  constructor(
    private readonly em: EntityManager,
    private readonly storage: Storage,
    private readonly archive: Archive,
    private readonly builders: Builder[],
    private readonly environment: EnvironmentService,
    private readonly dataDir: string,
    private readonly redaction: Redaction,
  ) {}

  async run(ctx: StageContext) {
    const build = await this.produce(ctx, false);
    return {
      also: async (tx: EntityManager) => {
        await tx.nativeUpdate(Build, { id: build.id }, { status: 'succeeded', finishedAt: new Date() });
      },
    };
  }

  async abandon(ctx: StageContext): Promise<void> {
    await this.em.fork().nativeUpdate(Build, { operationId: ctx.operation.id, status: 'running' }, { status: 'canceled', finishedAt: new Date() });
  }

  /**
   * Makes the version's artifact: with `skipCommands` the source tree (output directory applied) is
   * packed as is (skip_build). Returns the Build record, still `running` unless skipped.
   */
  async produce(ctx: StageContext, skipCommands: boolean): Promise<Build> {
    const analysis = ctx.version.analysis as unknown as Analysis | null;
    if (!analysis) throw new StageError('build_no_analysis', 'The version has no Analyze result; retry the operation', true);
    const em = this.em.fork();
    await em.nativeUpdate(Build, { operationId: ctx.operation.id, status: 'running' }, { status: 'canceled', finishedAt: new Date() });
    const build = Object.assign(new Build(), {
      accountId: ctx.operation.accountId,
      projectId: ctx.project.id,
      versionId: ctx.version.id,
      operationId: ctx.operation.id,
      status: skipCommands ? 'skipped' : 'running',
      logKey: `logs/${ctx.operation.id}/build-${ctx.attempt}.log`,
    });
    await em.persist(build).flush();
    const log = new BuildLog();
    // A retried operation has its snapshot already; a first run's is taken just before the build runs.
    let redactor = await this.redaction.forOperation(ctx.operation.id, ctx.project.id);
    let flushed = 0;
    const write = (line: string) => {
      log.line(redactor.text(line));
      if (Date.now() - flushed > 1000) {
        flushed = Date.now();
        void this.em.fork().nativeUpdate(Build, { id: build.id }, { log: { ...log.summary, lastLines: [...log.summary.lastLines] } }).catch(() => {});
      }
    };
    try {
      await withWorkspace(this.dataDir, `build-${ctx.operation.id}`, async (dir) => {
        const { zip, manifest } = await fetchVersion(this.storage, this.archive, ctx, dir);
        const artifact = join(dir, 'artifact.zip');
        const builder = skipCommands ? null : this.builders.find((b) => b.supports(analysis));
        if (builder === undefined) throw new StageError('build_unsupported', `No builder handles runtime ${analysis.runtime}`, false);
        if (builder) write(`Building with ${builder.id} (${analysis.runtime}${analysis.framework ? `, ${analysis.framework}` : ''})`);
        // A build that runs nothing takes its artifact straight from the upload, which is never unpacked.
        const direct = builder?.outputWithoutBuild?.({ detection: analysis, files: manifest.files.map((f) => f.path), log: write }) ?? null;
        if (direct !== null) await this.archive.repack(zip, manifest, direct, artifact, ctx.signal);
        else {
          const workspace = join(dir, 'src');
          await this.archive.extract(zip, manifest, workspace, ctx.signal);
          let outputDir = join(workspace, analysis.outputDir);
          if (builder) {
            const env = await this.environment.forBuild(ctx.operation.id, ctx.project.id);
            redactor = await this.redaction.forOperation(ctx.operation.id, ctx.project.id);
            ({ outputDir } = await builder.build({
              workspace,
              detection: analysis,
              env,
              signal: ctx.signal,
              log: write,
              progress: (f) => ctx.progress(0.1 + 0.8 * f),
            }));
          }
          await this.archive.pack(outputDir, artifact);
        }
        const stored = await this.storage.putContentAddressed('artifacts', createReadStream(artifact), { suffix: '.zip' });
        write(`Artifact ${stored.key} (${stored.size} bytes)`);
        Object.assign(build, { artifactKey: stored.key, artifactSha256: stored.sha256, artifactSize: stored.size });
      });
    } catch (err) {
      // Stopped from outside (a cancel, or the worker stopping) is not the build's failure.
      const stopped = ctx.signal.aborted;
      const e = err instanceof StageError ? err : deterministicFailure(err, 'build');
      write(stopped ? `Build stopped: ${ctx.signal.reason instanceof Error ? ctx.signal.reason.message : 'canceled'}` : `Build failed: ${e ? e.message : 'internal error'}`);
      await this.storeLog(build, log);
      const end = stopped ? { status: 'canceled' } : { status: 'failed', error: e ? { code: e.code, message: redactor.text(e.message) } : null };
      await em.nativeUpdate(Build, { id: build.id }, { ...end, log: log.summary, finishedAt: new Date() });
      throw err;
    }
    await this.storeLog(build, log);
    await em.nativeUpdate(Build, { id: build.id }, {
      artifactKey: build.artifactKey,
      artifactSha256: build.artifactSha256,
      artifactSize: build.artifactSize,
      log: log.summary,
      ...(skipCommands ? { finishedAt: new Date() } : {}),
    });
    return build;
  }

  private async storeLog(build: Build, log: BuildLog): Promise<void> {
    await this.storage.put(build.logKey!, Readable.from([log.text()])).catch(() => {});
  }
}

