import { readFileSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import yauzl, { type ZipFile } from 'yauzl';
import { ArchiveError, quoteName, type ArchiveErrorCode } from './archive-error.js';

// yauzl refuses these itself (strictFileNames keeps backslashes to be refused); its message ends with the name.
const yauzlRefusals: [string, ArchiveErrorCode, string][] = [
  ['invalid characters in fileName: ', 'archive_backslash', 'contains a backslash; ZIP paths use /'],
  ['absolute path: ', 'archive_absolute_path', 'is an absolute path'],
  ['invalid relative path: ', 'archive_path_traversal', 'climbs out of the archive with ..'],
  ['strong encryption is not supported', 'archive_encrypted', 'is encrypted; upload an archive without a password'],
];

/**
 * Turns what went wrong while reading an archive into an ArchiveError naming `entry` where known.
 * System errors (disk, permissions) are not the archive's fault and come back unchanged.
 */
export function zipError(err: unknown, entry: string | null = null): unknown {
  if (err instanceof ArchiveError || (err as NodeJS.ErrnoException)?.syscall) return err;
  const message = err instanceof Error ? err.message : String(err);
  for (const [prefix, code, what] of yauzlRefusals) {
    if (!message.startsWith(prefix)) continue;
    const name = message.slice(prefix.length) || entry;
    return new ArchiveError(code, `${name ? `Entry ${quoteName(name)}` : 'An entry'} ${what}`, name, { cause: err });
  }
  const shown = message.replace(
    /[\u0000-\u001f\u007f-\u009f]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return new ArchiveError('archive_invalid', `The archive is damaged or invalid: ${shown}`, entry, { cause: err });
}

/** ZIPs up to this size are read into memory whole and parsed there: one read instead of several per entry. */
const IN_MEMORY_BYTES = 8 * 1024 * 1024;
/** The bytes of the ZIPs opened from memory. */
const buffers = new WeakMap<ZipFile, Buffer>();

/** The whole ZIP when it was opened from memory, else undefined. */
export const bufferOf = (zip: ZipFile): Buffer | undefined => buffers.get(zip);

/**
 * Opens a local ZIP with yauzl (lazy entries, strict names, closed by the caller). A file that is no
 * ZIP at all is archive_not_zip; one that starts like a ZIP but cannot be read (truncated) is archive_invalid.
 */
export async function openZip(path: string, validateEntrySizes = true): Promise<ZipFile> {
  try {
    const options = { lazyEntries: true, strictFileNames: true, validateEntrySizes, autoClose: false };
    const buffer = smallFile(path);
    if (!buffer) return await yauzl.openPromise(path, options);
    const zip = await yauzl.fromBufferPromise(buffer, options);
    buffers.set(zip, buffer);
    return zip;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).syscall || (await startsLikeZip(path))) throw zipError(err);
    throw new ArchiveError('archive_not_zip', 'The upload is not a ZIP archive', null, { cause: err });
  }
}

/**
 * The bytes of the file at `path` when it has at most IN_MEMORY_BYTES, read with synchronous calls (an upload just
 * written, in the page cache: a few hundred µs for a MB, where the pool's five trips left Analyze idle longer);
 * null for a larger file.
 */
function smallFile(path: string): Buffer | null {
  return statSync(path).size > IN_MEMORY_BYTES ? null : readFileSync(path);
}

async function startsLikeZip(path: string): Promise<boolean> {
  const file = await open(path);
  try {
    const { buffer, bytesRead } = await file.read(Buffer.alloc(4), 0, 4, 0);
    return bytesRead === 4 && buffer.readUInt32LE(0) === 0x04034b50;
  } finally {
    await file.close();
  }
}
