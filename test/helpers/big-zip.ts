import { createCipheriv } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { rawZip } from './raw-zip.js';

const MiB = 1 << 20;

/** Pseudo-random bytes (an AES-CTR keystream), `total` of them in 1 MiB chunks; the same bytes every call. */
export function* noise(total: number): Generator<Buffer> {
  const cipher = createCipheriv('aes-128-ctr', Buffer.alloc(16, 7), Buffer.alloc(16));
  const zero = Buffer.alloc(MiB);
  for (let left = total; left > 0; left -= MiB) yield cipher.update(left >= MiB ? zero : zero.subarray(0, left));
}

/** A valid ZIP of exactly `size` bytes, one stored entry of noise, in chunks (never whole in memory). */
export function* storedZip(size: number): Generator<Buffer> {
  const name = 'blob.bin';
  const localLength = 30 + name.length;
  const dataSize = size - localLength - (46 + name.length) - 22;
  let crc = 0;
  for (const c of noise(dataSize)) crc = crc32(c, crc);
  // rawZip writes the headers without the data; the end record must then point past the data.
  const headers = rawZip([{ name, size: dataSize, compressedSize: dataSize, crc }]);
  const tail = Buffer.from(headers.subarray(localLength));
  tail.writeUInt32LE(localLength + dataSize, tail.length - 22 + 16);
  yield headers.subarray(0, localLength);
  yield* noise(dataSize);
  yield tail;
}

/** The chunks of `chunks` from byte `start` on. */
export function* from(chunks: Iterable<Buffer>, start: number): Generator<Buffer> {
  let at = 0;
  for (const c of chunks) {
    if (at + c.length > start) yield at >= start ? c : c.subarray(start - at);
    at += c.length;
  }
}
