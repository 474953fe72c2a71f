import type { Readable } from 'node:stream';
import { token } from '../tokens.js';

/** A file of an inspected archive, relative to the effective root (unwrapped, root_directory applied). */
export interface ArchiveFile {
  path: string;
  size: number;
}

/** What `inspect` found: the files to use and what was done to get them. */
export interface ArchiveManifest {
  files: ArchiveFile[];
  /** The archive path stripped from every file (unwrapped folder plus root directory), '' or ending in `/`. */
  prefix: string;
  fileCount: number;
  totalSize: number;
  warnings: string[];
}

/** An archive whose files were all checked, open to read single files; close it when done. */
export interface ArchiveReader {
  /**
   * The file at `path` (relative to the manifest's root), or null when there is none or it is larger than `maxBytes`.
   */
  readFile(path: string, maxBytes: number): Promise<Buffer | null>;
  close(): void;
}

/**
 * One checked file of an archive, as `Archive.each` hands it over: whole in `data` when it is small, otherwise as
 * `stream`, which must be read to its end (it fails while read when the file is damaged or inflates past its size).
 */
export interface ArchiveContent {
  /** Relative to the manifest's root, `/`-separated. */
  path: string;
  size: number;
  /** Whether the entry was executable. */
  executable: boolean;
  data?: Buffer;
  stream?: Readable;
  /**
   * With `data`, when the archive holds the file compressed in a form gzip carries as it is (a ZIP's deflate): the
   * file gzip-encoded, made of those stored bytes without compressing anything, and as dense as the archive's
   * writer made them. Keep it no longer than needed: it may hold the archive's stored bytes.
   */
  gzip?: () => Buffer;
}

/**
 * Reads and writes the ZIP archives of uploads and artifacts. Plugin: `archive-zip` (yauzl/yazl).
 * Failures that come from the archive's content reject with a StageError coded `archive_*` that names
 * the offending entry.
 */
export interface Archive {
  /** Checks the ZIP at a local path against every shape rule and returns its manifest. */
  inspect(zipPath: string, opts: { rootDirectory?: string }): Promise<ArchiveManifest>;
  /** Extracts exactly the manifest's files into `destDir` (empty or absent); cleans up on failure or abort. */
  extract(zipPath: string, manifest: ArchiveManifest, destDir: string, signal?: AbortSignal): Promise<void>;
  /**
   * Hands every manifest file to `fn`, one at a time in archive order, checked as `extract` checks it (its
   * declared size and CRC), without writing it anywhere: for callers that put the files somewhere of their own.
   * Rejects with what `fn` or the check threw; an abort rejects with the signal's reason.
   */
  each(
    zipPath: string,
    manifest: ArchiveManifest,
    fn: (file: ArchiveContent) => Promise<void>,
    signal?: AbortSignal,
  ): Promise<void>;
  /**
   * Reads every manifest file through, checked as `extract` checks it but written nowhere (a damaged
   * archive fails here as it would there), and keeps the archive open to read single files.
   */
  read(zipPath: string, manifest: ArchiveManifest, signal?: AbortSignal): Promise<ArchiveReader>;
  /**
   * Packs the directory as a deterministic ZIP at `destZipPath`; refuses symlinks. Given `maxBytes`, it stops as
   * soon as the ZIP passes them and rejects with HoistError('payload_too_large', {limit}); a failure leaves no file.
   */
  pack(srcDir: string, destZipPath: string, opts?: { maxBytes?: number }): Promise<void>;
}

export const ARCHIVE = token<Archive>('hoist.Archive');
