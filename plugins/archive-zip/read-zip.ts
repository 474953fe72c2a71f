import { posix } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Entry } from 'yauzl';
import type { ArchiveFile, ArchiveManifest } from './archive-types.js';
import { checked, eachManifestEntry, entryBytes, fileBytes, SMALL_ENTRY_BYTES } from './manifest-entries.js';
import { openZip, zipError } from './open-zip.js';

/** A ZIP whose manifest files were all checked, open to read single files. */
export interface ZipReader {
  /**
   * The bytes of the file at `path` (relative to the manifest's root), or null when there is none or
   * it is larger than `maxBytes`.
   */
  readFile(path: string, maxBytes: number): Promise<Buffer | null>;
  close(): void;
}

/**
 * Opens a local ZIP and reads every manifest file through, held to its declared size and CRC as
 * extractZip holds it, writing nothing; then keeps the ZIP open for `readFile`. Fails like
 * extractZip on a damaged or lying entry (an abort rejects with the signal's reason).
 */
export async function readZip(
  path: string,
  manifest: ArchiveManifest,
  opts: { signal?: AbortSignal } = {},
): Promise<ZipReader> {
  const { signal } = opts;
  signal?.throwIfAborted();
  const zip = await openZip(path, false);
  const files = new Map<string, { file: ArchiveFile; entry: Entry }>();
  try {
    await eachManifestEntry(zip, manifest, async (file, entry) => {
      if (file.size <= SMALL_ENTRY_BYTES) {
        signal?.throwIfAborted();
        await entryBytes(zip, entry, file);
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
      return fileBytes(zip, found.entry, found.file).catch((err) => Promise.reject(zipError(err, found.file.name)));
    },
    close: () => zip.close(),
  };
}

const discard = () => new Writable({ write: (_chunk, _encoding, done) => done() });
