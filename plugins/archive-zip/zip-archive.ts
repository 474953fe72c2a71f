import { ArchiveError, quoteName } from './archive-error.js';
import type { ArchiveManifest as ZipManifest } from './archive-types.js';
import { eachFile } from './each-file.js';
import { extractZip } from './extract-zip.js';
import { inspectZip } from './inspect-zip.js';
import { packDirectory } from './pack-directory.js';
import { readZip } from './read-zip.js';
import { StageError } from '../../core/errors.js';
import type { Archive, ArchiveContent, ArchiveManifest, ArchiveReader } from '../../core/ports/archive.js';

/** An archive refusal as the stage error the operation shows (code `archive_*`, entry named once, escaped). */
function asStageError(err: unknown): unknown {
  if (!(err instanceof ArchiveError)) return err;
  const { code, entry } = err.details;
  const named = entry === null || err.message.includes(quoteName(entry));
  return new StageError(
    code,
    named ? err.message : `${err.message} (entry: ${quoteName(entry)})`,
    { entry },
    { cause: err },
  );
}

/** ZIP archives through yauzl and yazl, with every shape check of this folder. */
export class ZipArchive implements Archive {
  async inspect(zipPath: string, opts: { rootDirectory?: string }): Promise<ArchiveManifest> {
    return inspectZip(zipPath, { rootDirectory: opts.rootDirectory }).catch((err) => Promise.reject(asStageError(err)));
  }

  async extract(zipPath: string, manifest: ArchiveManifest, destDir: string, signal?: AbortSignal): Promise<void> {
    return extractZip(zipPath, manifest as ZipManifest, destDir, { signal }).catch((err) =>
      Promise.reject(asStageError(err)),
    );
  }

  async each(
    zipPath: string,
    manifest: ArchiveManifest,
    fn: (file: ArchiveContent) => Promise<void>,
    signal?: AbortSignal,
  ): Promise<void> {
    return eachFile(
      zipPath,
      manifest as ZipManifest,
      (file, content) => fn({ path: file.path, size: file.size, executable: (file.mode & 0o111) !== 0, ...content }),
      signal,
    ).catch((err) => Promise.reject(asStageError(err)));
  }

  async read(zipPath: string, manifest: ArchiveManifest, signal?: AbortSignal): Promise<ArchiveReader> {
    const reader = await readZip(zipPath, manifest as ZipManifest, { signal }).catch((err) =>
      Promise.reject(asStageError(err)),
    );
    return {
      readFile: (path, maxBytes) => reader.readFile(path, maxBytes).catch((err) => Promise.reject(asStageError(err))),
      close: () => reader.close(),
    };
  }

  async pack(srcDir: string, destZipPath: string): Promise<void> {
    return packDirectory(srcDir, destZipPath).catch((err) => Promise.reject(asStageError(err)));
  }
}
