import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
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

/** A file's identity with a root directory (see ZipArchive), or null when it cannot be read. */
const identity = (path: string, rootDirectory?: string) =>
  stat(path, { bigint: true }).then(
    (s) =>
      JSON.stringify([resolve(path), `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`, rootDirectory ?? '']),
    () => null,
  );

/** How many manifests a ZipArchive keeps, and how many of their files in all. */
const KEPT_MANIFESTS = 16;
const KEPT_FILES = 50_000;

/**
 * ZIP archives through yauzl and yazl, with every shape check of this folder. It keeps the manifests it made lately,
 * by the file's path and identity there (device, inode, size, modification and change times) and root directory:
 * Deploy, shipping the upload that Analyze inspected in this process, gets its manifest without a second walk. Another
 * file at that path (storage and workspaces never rewrite a file in place: they make a new one) is another identity. A
 * kept manifest is frozen.
 */
export class ZipArchive implements Archive {
  private readonly kept = new Map<string, ArchiveManifest>();
  private keptFiles = 0;

  async inspect(zipPath: string, opts: { rootDirectory?: string }): Promise<ArchiveManifest> {
    const id = await identity(zipPath, opts.rootDirectory);
    const known = id === null ? undefined : this.kept.get(id);
    if (known) return known;
    const manifest = await inspectZip(zipPath, { rootDirectory: opts.rootDirectory }).catch((err) =>
      Promise.reject(asStageError(err)),
    );
    // Kept only when the file is still what was read.
    if (id !== null && (await identity(zipPath, opts.rootDirectory)) === id) this.keep(id, manifest);
    return manifest;
  }

  /** Keeps `manifest`, frozen, forgetting the oldest beyond KEPT_MANIFESTS or KEPT_FILES. */
  private keep(id: string, manifest: ArchiveManifest): void {
    if (manifest.fileCount > KEPT_FILES) return;
    for (const file of manifest.files) Object.freeze(file);
    Object.freeze(manifest.files);
    Object.freeze(manifest.warnings);
    this.kept.set(id, Object.freeze(manifest));
    this.keptFiles += manifest.fileCount;
    for (const [oldest, m] of this.kept) {
      if (this.kept.size <= KEPT_MANIFESTS && this.keptFiles <= KEPT_FILES) break;
      this.kept.delete(oldest);
      this.keptFiles -= m.fileCount;
    }
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
