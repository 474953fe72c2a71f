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
   * Reads every manifest file through, checked as `extract` checks it but written nowhere (a damaged
   * archive fails here as it would there), and keeps the archive open to read single files.
   */
  read(zipPath: string, manifest: ArchiveManifest, signal?: AbortSignal): Promise<ArchiveReader>;
  /** Packs the directory as a deterministic ZIP at `destZipPath`; refuses symlinks. */
  pack(srcDir: string, destZipPath: string): Promise<void>;
}

export const ARCHIVE = token<Archive>('hoist.Archive');
