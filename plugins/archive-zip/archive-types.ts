import type { NameLimits } from './entry-name.js';

/** Bounds an archive must stay within. */
export interface ArchiveLimits extends NameLimits {
  /** Most entries (files, folders, metadata) the central directory may list. */
  maxEntries: number;
  /** Most bytes all entries may inflate to, by their declared sizes and again while extracting. */
  maxUncompressedBytes: number;
  /** Highest uncompressed/compressed ratio, per entry and for the whole archive... */
  maxCompressionRatio: number;
  /** ...judged only once the entry (or the whole archive) inflates past this many bytes. */
  ratioMinBytes: number;
}

/** The limits used where a caller sets none. */
export const DEFAULT_ARCHIVE_LIMITS: ArchiveLimits = {
  maxEntries: 20_000,
  maxUncompressedBytes: 1_000_000_000,
  maxCompressionRatio: 200,
  ratioMinBytes: 5_000_000,
  maxSegmentBytes: 255,
  // Far below PATH_MAX (4096), which also has to hold the data directory and the workspace.
  maxPathBytes: 1024,
  maxDepth: 64,
};

/** What inspectZip takes: limits to override and the project's root directory. */
export interface InspectOptions extends Partial<ArchiveLimits> {
  /** A folder inside the archive (after unwrapping) to use as the root; `.`, `./` or empty mean the root. */
  rootDirectory?: string | null;
}

/** One file of the effective tree. */
export interface ArchiveFile {
  /** Path relative to the effective root, `/`-separated. */
  path: string;
  /** The entry's name in the archive, as stored. */
  name: string;
  size: number;
  compressedSize: number;
  /** Unix permission bits from the entry (0 when the archive has none). */
  mode: number;
}

/** The checked shape of an archive: exactly what extractZip will write. */
export interface ArchiveManifest {
  files: ArchiveFile[];
  /** The archive path stripped from every file (unwrapped folder plus root directory), `''` or ending in `/`. */
  prefix: string;
  /** Sum of the listed files' sizes. */
  totalSize: number;
  fileCount: number;
  /** Things worth telling the user that did not stop the upload. */
  warnings: string[];
}
