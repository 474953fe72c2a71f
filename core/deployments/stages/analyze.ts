import type { EntityManager } from '@mikro-orm/core';
import { join } from 'node:path';
import { HoistError, StageError } from '../../errors.js';
import type { Analyzer, Detection } from '../../ports/analyzer.js';
import type { Archive, ArchiveManifest, ArchiveReader } from '../../ports/archive.js';
import { objectFile, type Storage } from '../../ports/storage.js';
import type { VersionRepository } from '../repositories/version-repository.js';
import type { StageContext, StageImpl } from '../stage-runner.js';
import { withWorkspace } from '../workspace.js';

/** The Analyze result stored on the Version and shown in the operation's child state. */
export interface Analysis extends Detection {
  analyzer: string;
  fileCount: number;
  totalSize: number;
  strippedPrefix: string;
  archiveWarnings: string[];
}

/** Merged settings: the upload's options override the project's settings. */
export function settingsOf(ctx: Pick<StageContext, 'project' | 'version'>) {
  const o = ctx.version.options;
  return {
    ...ctx.project.settings,
    ...(o.root_directory !== undefined ? { root_directory: o.root_directory } : {}),
    ...(o.runtime !== undefined ? { runtime: o.runtime } : {}),
    ...(o.framework !== undefined ? { framework: o.framework } : {}),
    skip_build: o.skip_build === true,
  };
}

/**
 * The version's archive as a local file (in place, or copied to `upload.zip` in the workspace), its shape checked;
 * returns its path and the manifest. StageError('archive_removed') when FileRetention removed it.
 */
export async function fetchVersion(
  storage: Storage,
  archive: Archive,
  ctx: StageContext,
  dir: () => Promise<string>,
): Promise<{ zip: string; manifest: ArchiveManifest }> {
  const removed = () =>
    new StageError('archive_removed', 'The archive of this version was removed from storage; upload it again');
  if (ctx.version.archiveRemovedAt) throw removed();
  const zip = await objectFile(
    storage,
    ctx.version.archiveKey,
    async () => join(await dir(), 'upload.zip'),
    ctx.signal,
  ).catch((err) => {
    throw err instanceof HoistError && err.code === 'not_found' ? removed() : err;
  });
  return { zip, manifest: await archive.inspect(zip, { rootDirectory: settingsOf(ctx).root_directory }) };
}

/** Analyze: checks the archive's shape and asks every analyzer, highest priority first. */
export class AnalyzeStage implements StageImpl {
  constructor(
    private readonly versions: VersionRepository,
    private readonly storage: Storage,
    private readonly archive: Archive,
    private readonly analyzers: Analyzer[],
    private readonly dataDir: string,
  ) {}

  async run(ctx: StageContext) {
    const analysis = await withWorkspace(this.dataDir, `analyze-${ctx.operation.id}`, async (dir) => {
      const { zip, manifest } = await fetchVersion(this.storage, this.archive, ctx, dir);
      // Every file is checked as Build's extraction checks it, but nothing is written to disk: the
      // analyzers read the few files they look at straight from the archive.
      const reader = await this.archive.read(zip, manifest, ctx.signal);
      try {
        return await this.detect(ctx, manifest, reader);
      } finally {
        reader.close();
      }
    });
    // What a stage run inline after this one judges on (Build of a site that builds nothing).
    ctx.version.analysis = analysis as unknown as Record<string, unknown>;
    return {
      also: (tx: EntityManager) => this.versions.within(tx).recordAnalysis(ctx.version.id, analysis),
    };
  }

  /** Asks every analyzer, highest priority first; the first detection wins. */
  private async detect(ctx: StageContext, manifest: ArchiveManifest, reader: ArchiveReader): Promise<Analysis> {
    ctx.progress(0.5);
    ctx.files = manifest.files.map((f) => f.path);
    const input = {
      files: ctx.files,
      settings: settingsOf(ctx),
      readFile: async (path: string, maxBytes = 1_000_000) =>
        (await reader.readFile(path, maxBytes))?.toString('utf8') ?? null,
    };
    for (const analyzer of [...this.analyzers].sort((a, b) => b.priority - a.priority)) {
      const detection = await analyzer.detect(input);
      if (detection) {
        return {
          ...detection,
          analyzer: analyzer.id,
          fileCount: manifest.fileCount,
          totalSize: manifest.totalSize,
          strippedPrefix: manifest.prefix,
          archiveWarnings: manifest.warnings,
        };
      }
    }
    throw new StageError(
      'analyze_unsupported',
      'No analyzer recognised this archive: add an index.html for a static site or a package.json for a Node.js app',
    );
  }
}
