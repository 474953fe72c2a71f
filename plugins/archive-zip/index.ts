import { ArchiveError, quoteName, extractZip, inspectZip, packDirectory, readZip, repackZip, type ArchiveManifest as ZipManifest } from '../../adapters/archive/index.js';
import { StageError } from '../../core/operations/stage-error.js';
import { ARCHIVE, type Archive, type ArchiveManifest, type ArchiveReader } from '../../core/ports/archive.js';
import type { PluginDefinition } from '../../core/plugin.js';

/** An archive refusal as the stage error the operation shows (code `archive_*`, entry named once, escaped). */
function asStageError(err: unknown): unknown {
  if (!(err instanceof ArchiveError)) return err;
  const { code, entry } = err.details;
  const named = entry === null || err.message.includes(quoteName(entry));
  return new StageError(code, named ? err.message : `${err.message} (entry: ${quoteName(entry)})`, false, { entry }, { cause: err });
}

/** ZIP archives through yauzl and yazl, with every shape check of adapters/archive. */
export class ZipArchive implements Archive {
  async inspect(zipPath: string, opts: { rootDirectory?: string }): Promise<ArchiveManifest> {
    return inspectZip(zipPath, { rootDirectory: opts.rootDirectory }).catch((err) => Promise.reject(asStageError(err)));
  }

  async extract(zipPath: string, manifest: ArchiveManifest, destDir: string, signal?: AbortSignal): Promise<void> {
    return extractZip(zipPath, manifest as ZipManifest, destDir, { signal }).catch((err) => Promise.reject(asStageError(err)));
  }

  async read(zipPath: string, manifest: ArchiveManifest, signal?: AbortSignal): Promise<ArchiveReader> {
    const reader = await readZip(zipPath, manifest as ZipManifest, { signal }).catch((err) => Promise.reject(asStageError(err)));
    return { readFile: (path, maxBytes) => reader.readFile(path, maxBytes).catch((err) => Promise.reject(asStageError(err))), close: () => reader.close() };
  }

  async pack(srcDir: string, destZipPath: string): Promise<void> {
    return packDirectory(srcDir, destZipPath).catch((err) => Promise.reject(asStageError(err)));
  }

  async repack(zipPath: string, manifest: ArchiveManifest, dir: string, destZipPath: string, signal?: AbortSignal): Promise<void> {
    return repackZip(zipPath, manifest as ZipManifest, dir, destZipPath, { signal }).catch((err) => Promise.reject(asStageError(err)));
  }
}

export default {
  id: 'archive-zip',
  port: 'archive',
  name: 'zip',
  token: ARCHIVE,
  create: () => new ZipArchive(),
} satisfies PluginDefinition<Archive>;
