import { pipeline, type Readable } from 'node:stream';
import type { ArchiveFile, ArchiveManifest } from './archive-types.js';
import { checked, eachManifestEntry, entryBytes, gzipMember, SMALL_ENTRY_BYTES } from './manifest-entries.js';
import { openZip } from './open-zip.js';
import type { CheckedBytes } from './read-zip.js';

/**
 * A file's bytes as eachFile hands them over: whole when small (with `gzip` when the ZIP stored them as one deflate
 * stream: see ArchiveContent.gzip), else a stream to read to its end.
 */
export type FileContent =
  { data: Buffer; stream?: undefined; gzip?: () => Buffer } | { data?: undefined; stream: Readable; gzip?: undefined };

/**
 * Opens the ZIP at `path` and hands every manifest file to `fn`, one at a time in archive order, held to its
 * declared size and CRC: up to SMALL_ENTRY_BYTES whole (checked before `fn` gets it), larger ones as a stream that
 * fails while it is read. What `fn` throws comes back as it was thrown; a damaged archive rejects with an
 * ArchiveError; an abort with the signal's reason. The ZIP is closed at the end.
 */
export async function eachFile(
  path: string,
  manifest: ArchiveManifest,
  fn: (file: ArchiveFile, content: FileContent) => Promise<void>,
  signal?: AbortSignal,
): Promise<void> {
  signal?.throwIfAborted();
  const zip = await openZip(path, false);
  // eachManifestEntry reads any error as the archive's; one of fn's own is not.
  let own: { err: unknown } | null = null;
  const call = (file: ArchiveFile, content: FileContent) =>
    fn(file, content).catch((err: unknown) => {
      own = { err };
      throw err;
    });
  try {
    await eachManifestEntry(zip, manifest, async (file, entry) => {
      signal?.throwIfAborted();
      if (file.size <= SMALL_ENTRY_BYTES) {
        return call(file, smallContent({ ...(await entryBytes(zip, entry, file)), crc32: entry.crc32 }));
      }
      const stream = pipeline(await zip.openReadStreamPromise(entry), checked(file, entry.crc32), () => {});
      await call(file, { stream });
    });
  } catch (err) {
    throw signal?.aborted ? signal.reason : own ? (own as { err: unknown }).err : err;
  } finally {
    zip.close();
  }
}

/** A small file's content as eachFile hands it over, from its checked bytes. */
const smallContent = ({ data, deflate, crc32 }: CheckedBytes): FileContent =>
  deflate ? { data, gzip: () => gzipMember(deflate, data.length, crc32) } : { data };

/**
 * Hands every manifest file to `fn` as eachFile does, from `contents`: the checked bytes readZip kept of this very
 * archive (every file small). Nothing is read again.
 */
export async function eachKept(
  manifest: ArchiveManifest,
  contents: ReadonlyMap<string, CheckedBytes>,
  fn: (file: ArchiveFile, content: FileContent) => Promise<void>,
  signal?: AbortSignal,
): Promise<void> {
  for (const file of manifest.files) {
    signal?.throwIfAborted();
    await fn(file, smallContent(contents.get(file.path)!));
  }
}
