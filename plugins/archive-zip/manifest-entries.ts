import { Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32, inflateRawSync } from 'node:zlib';
import type { Entry, ZipFile } from 'yauzl';
import { ArchiveError, quoteName } from './archive-error.js';
import type { ArchiveFile, ArchiveManifest } from './archive-types.js';
import { bufferOf, zipError } from './open-zip.js';

/**
 * Walks the entries of an open ZIP (lazy entries) that the manifest lists, in archive order, and
 * hands each to `fn` with its manifest file. Fails (ArchiveError naming the entry) when an entry
 * differs from the inspected archive or a listed one is missing.
 */
export async function eachManifestEntry(
  zip: ZipFile,
  manifest: ArchiveManifest,
  fn: (file: ArchiveFile, entry: Entry) => Promise<void>,
): Promise<void> {
  const wanted = new Map(manifest.files.map((f) => [f.name, f]));
  let current: string | null = null;
  try {
    for await (const entry of zip.eachEntry()) {
      const file = wanted.get(entry.fileName);
      if (!file) continue;
      wanted.delete(entry.fileName);
      current = file.name;
      if (entry.uncompressedSize !== file.size || entry.compressedSize !== file.compressedSize)
        throw new ArchiveError(
          'archive_invalid',
          `Entry ${quoteName(file.name)} differs from the inspected archive`,
          file.name,
        );
      await fn(file, entry);
    }
  } catch (err) {
    throw zipError(err, current);
  }
  const missing = wanted.keys().next();
  if (!missing.done)
    throw new ArchiveError(
      'archive_invalid',
      `Entry ${quoteName(missing.value)} is missing from the archive`,
      missing.value,
    );
}

/** Entries declared at most this large are read whole into memory and inflated at once (no stream per small file). */
export const SMALL_ENTRY_BYTES = 1024 * 1024;

/**
 * An entry's bytes, checked, with its stored deflate stream (`deflate`) when it was deflated and that stream is all
 * of its stored bytes (nothing after its end): what gzipMember makes a ready gzip encoding of.
 */
export interface EntryBytes {
  data: Buffer;
  deflate?: Buffer;
}

/** The bytes of an entry of at most SMALL_ENTRY_BYTES, held to its declared size and CRC. */
export async function entryBytes(zip: ZipFile, entry: Entry, file: ArchiveFile): Promise<EntryBytes> {
  const deflated = entry.compressionMethod === 8;
  const raw = bufferOf(zip) ? rawBytes(bufferOf(zip)!, entry) : await readRaw(zip, entry, deflated);
  let data = raw;
  let whole = false;
  if (deflated)
    try {
      // `info` gives the engine too (Node's types leave it out).
      const { buffer, engine } = inflateRawSync(raw, {
        maxOutputLength: Math.max(1, file.size),
        info: true,
      }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
      data = buffer;
      // How much of the stored bytes the stream took (zlib's processChunkSync counts it): a stream with bytes after
      // its end is read as before, but is no gzip member.
      whole = engine.bytesWritten === raw.length;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(file);
      throw err;
    }
  if (data.length > file.size) throw tooLarge(file);
  if (data.length !== file.size || crc32(data) !== entry.crc32) throw damaged(file);
  return whole ? { data, deflate: raw } : { data };
}

/** A gzip member (RFC 1952: no name, no time) of the deflate stream of `data`, whose size and CRC-32 are given. */
export function gzipMember(deflate: Buffer, size: number, crc: number): Buffer {
  const member = Buffer.allocUnsafe(10 + deflate.length + 8);
  member.set(GZIP_HEADER, 0);
  deflate.copy(member, 10);
  member.writeUInt32LE(crc >>> 0, 10 + deflate.length);
  member.writeUInt32LE(size >>> 0, 14 + deflate.length);
  return member;
}
/** ID1 ID2, deflate, no flags, no time, no extra flags, OS unknown. */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);

/** The bytes of any entry, held to its declared size and CRC (whole in memory: mind the size). */
export async function fileBytes(zip: ZipFile, entry: Entry, file: ArchiveFile, signal?: AbortSignal): Promise<Buffer> {
  if (file.size <= SMALL_ENTRY_BYTES) return (await entryBytes(zip, entry, file)).data;
  const chunks: Buffer[] = [];
  const collect = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done();
    },
  });
  await pipeline(await zip.openReadStreamPromise(entry), checked(file, entry.crc32), collect, { signal });
  return Buffer.concat(chunks);
}

/** An entry's stored bytes, read through a stream. */
async function readRaw(zip: ZipFile, entry: Entry, deflated: boolean): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await zip.openReadStreamPromise(entry, deflated ? { decompress: false } : {}))
    chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** An entry's stored bytes sliced from a ZIP held in memory, found through its local header as yauzl finds them. */
function rawBytes(zip: Buffer, entry: Entry): Buffer {
  const at = entry.relativeOffsetOfLocalHeader;
  if (at + 30 > zip.length || zip.readUInt32LE(at) !== 0x04034b50)
    throw new Error('invalid local file header signature');
  const start = at + 30 + zip.readUInt16LE(at + 26) + zip.readUInt16LE(at + 28);
  if (start + entry.compressedSize > zip.length) throw new Error('file data overflows file bounds');
  return zip.subarray(start, start + entry.compressedSize);
}

/**
 * Passes an entry's bytes through, failing as soon as it inflates past its declared size, or at the
 * end on a short or corrupt entry.
 */
export function checked(file: ArchiveFile, crc: number): Transform {
  let bytes = 0;
  let sum = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      if (bytes > file.size) return done(tooLarge(file));
      sum = crc32(chunk, sum);
      done(null, chunk);
    },
    flush(done) {
      done(bytes !== file.size || sum !== crc ? damaged(file) : null);
    },
  });
}

const tooLarge = (file: ArchiveFile) =>
  new ArchiveError(
    'archive_too_large_uncompressed',
    `Entry ${quoteName(file.name)} inflates past its declared ${file.size} bytes`,
    file.name,
  );
const damaged = (file: ArchiveFile) =>
  new ArchiveError(
    'archive_invalid',
    `Entry ${quoteName(file.name)} is damaged (its size or checksum does not match)`,
    file.name,
  );
