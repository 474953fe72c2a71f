import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { ArchiveError, quoteName } from './archive-error.js';
import type { ArchiveManifest as ZipManifest } from './archive-types.js';
import { eachFile, eachKept, type FileContent } from './each-file.js';
import { extractZip } from './extract-zip.js';
import { inspectZip } from './inspect-zip.js';
import { packDirectory, type PackOptions } from './pack-directory.js';
import { keptBytesOf, readZip, type CheckedBytes } from './read-zip.js';
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
 * How many bytes of checked file contents a ZipArchive keeps in all (inflated and stored: keptBytesOf), and how long
 * it keeps them unused. Analyze reads every file of an upload to check it; Deploy of a site with nothing to build
 * then needs every one of them again, right after: reading 1 MB in 50 files out of the ZIP again, inflated and checked,
 * took 5–15 ms of `each` (bench/upload-to-live.ts's upload, measured alone), 0.2–0.6 ms handed over from memory.
 */
const KEPT_CONTENT_BYTES = 32 * 1024 * 1024;
const KEPT_CONTENT_MS = 60_000;

/** Checked contents kept for a kept manifest: the archive's resolved path, the bytes, their count and expiry. */
interface KeptContents {
  path: string;
  files: ReadonlyMap<string, CheckedBytes>;
  bytes: number;
  expiry: NodeJS.Timeout;
}

/**
 * ZIP archives through yauzl and yazl, with every shape check of this folder. It keeps the manifests it made lately,
 * by the file's path and identity there (device, inode, size, modification and change times) and root directory:
 * Deploy, shipping the upload that Analyze inspected in this process, gets its manifest without a second walk. Another
 * file at that path (storage and workspaces never rewrite a file in place: they make a new one) is another identity. A
 * kept manifest is frozen. When `read` checks every file of an archive whose manifest is kept (and the file is still
 * what was inspected), it keeps their checked bytes too, within KEPT_CONTENT_BYTES, for one `each` or `extract` of that
 * archive with that manifest: Deploy (or Build) then reads nothing again.
 */
export class ZipArchive implements Archive {
  private readonly kept = new Map<string, ArchiveManifest>();
  private keptFiles = 0;
  /** The identity and root directory each manifest was kept under (it is kept while `kept` has it there). */
  private readonly keptAs = new WeakMap<ArchiveManifest, { id: string; rootDirectory?: string }>();
  private readonly contents = new Map<ArchiveManifest, KeptContents>();
  private contentBytes = 0;

  async inspect(zipPath: string, opts: { rootDirectory?: string }): Promise<ArchiveManifest> {
    const id = await identity(zipPath, opts.rootDirectory);
    const known = id === null ? undefined : this.kept.get(id);
    if (known) return known;
    const manifest = await inspectZip(zipPath, { rootDirectory: opts.rootDirectory }).catch((err) =>
      Promise.reject(asStageError(err)),
    );
    // Kept only when the file is still what was read.
    if (id !== null && (await identity(zipPath, opts.rootDirectory)) === id)
      this.keep(id, manifest, opts.rootDirectory);
    return manifest;
  }

  /** Keeps `manifest`, frozen, forgetting the oldest beyond KEPT_MANIFESTS or KEPT_FILES. */
  private keep(id: string, manifest: ArchiveManifest, rootDirectory?: string): void {
    if (manifest.fileCount > KEPT_FILES) return;
    for (const file of manifest.files) Object.freeze(file);
    Object.freeze(manifest.files);
    Object.freeze(manifest.warnings);
    this.kept.set(id, Object.freeze(manifest));
    this.keptAs.set(manifest, { id, rootDirectory });
    this.keptFiles += manifest.fileCount;
    for (const [oldest, m] of this.kept) {
      if (this.kept.size <= KEPT_MANIFESTS && this.keptFiles <= KEPT_FILES) break;
      this.kept.delete(oldest);
      this.keptFiles -= m.fileCount;
      this.forget(m);
    }
  }

  /** Keeps the checked `files` of the archive at `path` for `manifest` (a kept one), forgetting the oldest beyond. */
  private keepContents(manifest: ArchiveManifest, path: string, files: ReadonlyMap<string, CheckedBytes>): void {
    this.forget(manifest);
    const expiry = setTimeout(() => this.forget(manifest), KEPT_CONTENT_MS).unref();
    const bytes = keptBytesOf(manifest as ZipManifest);
    this.contents.set(manifest, { path: resolve(path), files, bytes, expiry });
    this.contentBytes += bytes;
    for (const oldest of this.contents.keys()) {
      if (this.contentBytes <= KEPT_CONTENT_BYTES) break;
      this.forget(oldest);
    }
  }

  /** Drops the contents kept for `manifest`, if any. */
  private forget(manifest: ArchiveManifest): void {
    const kept = this.contents.get(manifest);
    if (!kept) return;
    clearTimeout(kept.expiry);
    this.contents.delete(manifest);
    this.contentBytes -= kept.bytes;
  }

  async extract(zipPath: string, manifest: ArchiveManifest, destDir: string, signal?: AbortSignal): Promise<void> {
    const kept = this.take(zipPath, manifest);
    return extractZip(zipPath, manifest as ZipManifest, destDir, {
      signal,
      ...(kept ? { files: (fn) => eachKept(manifest as ZipManifest, kept.files, fn, signal) } : {}),
    }).catch((err) => Promise.reject(asStageError(err)));
  }

  /** The contents kept for `manifest` of the archive at `zipPath`, taken (they serve one `each` or `extract`). */
  private take(zipPath: string, manifest: ArchiveManifest): KeptContents | undefined {
    const found = this.contents.get(manifest);
    if (found?.path !== resolve(zipPath)) return undefined;
    this.forget(manifest);
    return found;
  }

  async each(
    zipPath: string,
    manifest: ArchiveManifest,
    fn: (file: ArchiveContent) => Promise<void>,
    signal?: AbortSignal,
  ): Promise<void> {
    const give = (file: ZipManifest['files'][number], content: FileContent) =>
      fn({ path: file.path, size: file.size, executable: (file.mode & 0o111) !== 0, ...content });
    const kept = this.take(zipPath, manifest);
    const files = kept
      ? eachKept(manifest as ZipManifest, kept.files, give, signal)
      : eachFile(zipPath, manifest as ZipManifest, give, signal);
    return files.catch((err) => Promise.reject(asStageError(err)));
  }

  async read(zipPath: string, manifest: ArchiveManifest, signal?: AbortSignal): Promise<ArchiveReader> {
    // Only a kept manifest's contents are kept: `each` knows its archive by it.
    const as = this.keptAs.get(manifest);
    const kept = as && this.kept.get(as.id) === manifest ? as : undefined;
    const reader = await readZip(zipPath, manifest as ZipManifest, {
      signal,
      keepBytes: kept ? KEPT_CONTENT_BYTES : 0,
    }).catch((err) => Promise.reject(asStageError(err)));
    // The file read must still be the one inspected (identity: resolved path, stat, root directory).
    if (reader.contents && kept && (await identity(zipPath, kept.rootDirectory)) === kept.id)
      this.keepContents(manifest, zipPath, reader.contents);
    return {
      readFile: (path, maxBytes) => reader.readFile(path, maxBytes).catch((err) => Promise.reject(asStageError(err))),
      close: () => reader.close(),
    };
  }

  /**
   * Packs `srcDir` as a deterministic ZIP at `destZipPath` (see packDirectory); with `opts.maxBytes` it stops as soon
   * as the ZIP passes them, rejecting with HoistError('payload_too_large', {limit}) and leaving no file.
   */
  async pack(srcDir: string, destZipPath: string, opts: PackOptions = {}): Promise<void> {
    return packDirectory(srcDir, destZipPath, opts).catch((err) => Promise.reject(asStageError(err)));
  }
}
