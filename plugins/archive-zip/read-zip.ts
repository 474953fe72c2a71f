import { posix } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Entry } from 'yauzl';
import type { ArchiveFile, ArchiveManifest } from './archive-types.js';
import {
  checked,
  eachManifestEntry,
  entryBytes,
  fileBytes,
  SMALL_ENTRY_BYTES,
  type EntryBytes,
} from './manifest-entries.js';
import { openZip, zipError } from './open-zip.js';

/** A ZIP whose manifest files were all checked, open to read single files. */
export interface ZipReader {
  /**
   * The bytes of the file at `path` (relative to the manifest's root), or null when there is none or
   * it is larger than `maxBytes`.
   */
  readFile(path: string, maxBytes: number): Promise<Buffer | null>;
  /** Every manifest file's checked bytes by path, when readZip was asked to keep them and could (see `keepBytes`). */
  contents: ReadonlyMap<string, CheckedBytes> | null;
  close(): void;
}

/** A file's checked bytes (EntryBytes) with its entry's CRC-32, as eachFile hands a small file over. */
export interface CheckedBytes extends EntryBytes {
  crc32: number;
}

/** What keeping the checked bytes of every file of `manifest` holds in memory: the inflated and the stored bytes. */
export const keptBytesOf = (manifest: ArchiveManifest) =>
  manifest.files.reduce((sum, f) => sum + f.size + f.compressedSize, 0);

/**
 * Opens a local ZIP and reads every manifest file through, held to its declared size and CRC as
 * extractZip holds it, writing nothing; then keeps the ZIP open for `readFile`. Fails like
 * extractZip on a damaged or lying entry (an abort rejects with the signal's reason). With `keepBytes`, the checked
 * bytes of every file are kept in `contents` when all are small (SMALL_ENTRY_BYTES) and keptBytesOf the manifest is
 * at most that.
 */
export async function readZip(
  path: string,
  manifest: ArchiveManifest,
  opts: { signal?: AbortSignal; keepBytes?: number } = {},
): Promise<ZipReader> {
  const { signal, keepBytes = 0 } = opts;
  signal?.throwIfAborted();
  const zip = await openZip(path, false);
  const files = new Map<string, { file: ArchiveFile; entry: Entry }>();
  const keep =
    manifest.files.every((f) => f.size <= SMALL_ENTRY_BYTES) && keptBytesOf(manifest) <= keepBytes
      ? new Map<string, CheckedBytes>()
      : null;
  try {
    await eachManifestEntry(zip, manifest, async (file, entry) => {
      if (file.size <= SMALL_ENTRY_BYTES) {
        signal?.throwIfAborted();
        const bytes = await entryBytes(zip, entry, file);
        keep?.set(file.path, { ...bytes, crc32: entry.crc32 });
      } else {
        await pipeline(await zip.openReadStreamPromise(entry), checked(file, entry.crc32), discard(), { signal });
      }
      files.set(file.path, { file, entry });
    });
  } catch (err) {
    zip.close();
    throw signal?.aborted ? signal.reason : err;
  }
  return {
    async readFile(path, maxBytes) {
      const found = files.get(posix.normalize(path).replace(/^\.\//, ''));
      if (!found || found.file.size > maxBytes) return null;
      const kept = keep?.get(found.file.path);
      if (kept) return Buffer.from(kept.data);
      return fileBytes(zip, found.entry, found.file).catch((err) => Promise.reject(zipError(err, found.file.name)));
    },
    contents: keep,
    close: () => zip.close(),
  };
}

const discard = () => new Writable({ write: (_chunk, _encoding, done) => done() });
