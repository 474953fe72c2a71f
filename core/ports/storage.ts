import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HoistError, invalid } from '../errors.js';
import { token } from '../tokens.js';

/** What `put` stored: the key, the byte count and the SHA-256 of the bytes (lowercase hex). */
export interface StoredObject {
  key: string;
  size: number;
  sha256: string;
}

/** An object as `stat` and `list` see it. */
export interface ObjectInfo {
  key: string;
  size: number;
  modifiedAt: Date;
}

export interface PutOptions {
  /** More bytes than this reject the put with HoistError('payload_too_large', {limit}) as soon as they arrive. */
  maxBytes?: number;
  /** Aborting it rejects the put with an AbortError. */
  signal?: AbortSignal;
}

/** Bytes `start` to `end` inclusive (HTTP Range style); `end` defaults to, and is clamped to, the last byte. */
export interface ByteRange {
  start: number;
  end?: number;
}

/** A part of a multipart upload as the backend holds it. */
export interface UploadedPart {
  /** 1 to 10,000. */
  number: number;
  size: number;
  /** The backend's ETag of the part, without quotes. */
  etag: string;
}

/** The largest part of a multipart upload (S3's limit): `DirectUploads.partUrl` takes no larger size. */
export const MAX_PART_BYTES = 5 * 1024 * 1024 * 1024;

/**
 * Uploads and downloads that bypass Hoist: presigned, time-limited URLs that let a client move
 * an object's bytes straight to or from the backend (S3 multipart uploads). Offered by
 * `storage-minio`; `storage-local` has none (its resumable uploads go through the API, tus-style).
 * Upload ids are the backend's; an object appears at `key` only when `completeMultipart` succeeds.
 */
export interface DirectUploads {
  /** The smallest size of every part but the last that the backend accepts (S3: 5 MiB). */
  readonly minPartBytes: number;
  /** Starts a multipart upload that `completeMultipart` turns into the object at `key`; resolves with its upload id. */
  createMultipart(key: string): Promise<string>;
  /**
   * A URL that takes part `number` (1 to 10,000) of the upload as the body of a plain HTTP PUT for `expiresInSeconds`;
   * the answer's ETag header names the part. The URL is bound to `size` (1 to MAX_PART_BYTES), the part's planned
   * length: the backend refuses a PUT whose Content-Length is any other (or absent, as with a chunked body) and
   * stores nothing of it, so one URL never holds more than `size` bytes.
   */
  partUrl(key: string, uploadId: string, number: number, size: number, expiresInSeconds: number): Promise<string>;
  /**
   * The parts received so far, by ascending number; HoistError('not_found') when the upload is unknown (completed or
   * aborted).
   */
  listParts(key: string, uploadId: string): Promise<UploadedPart[]>;
  /**
   * Joins `parts` (ascending numbers, each with its ETag) into the object at `key`, which appears
   * whole. HoistError('invalid_request') when the backend refuses the list (a part missing, an
   * ETag that differs, a part too small), 'not_found' when the upload is unknown.
   */
  completeMultipart(key: string, uploadId: string, parts: { number: number; etag: string }[]): Promise<void>;
  /** Discards the upload and the parts it received; an unknown upload is not an error. */
  abortMultipart(key: string, uploadId: string): Promise<void>;
  /** A URL that gives the object to a plain HTTP GET (Range supported) for `expiresInSeconds`. */
  getUrl(key: string, expiresInSeconds: number): Promise<string>;
}

/**
 * Object storage for uploads, build artifacts and logs. Plugins: `storage-local` (files under
 * `<dataDir>/storage`, the default) and `storage-minio`. Every plugin passes the suite in
 * test/contract/storage.ts.
 *
 * Keys are `/`-separated segments of lowercase letters, digits, `.`, `_` and `-`, none empty or
 * starting with `.`, at most 1024 characters: `uploads/<id>.zip`, `artifacts/<account>/sha256/<hex>.zip`,
 * `logs/<operation>/<stage>.log`. Any other key rejects with HoistError('invalid_request').
 * Objects are written whole (there is no append: a log is stored when its stage ends).
 * Backend failures reject with HoistError('unavailable') carrying the backend's error as `cause`.
 */
export interface Storage {
  /**
   * Streams `body` (Buffer chunks; string chunks count as UTF-8) into the object at `key`,
   * hashing and counting it on the way, and replaces any object there. Resolves once the object
   * is durable. The object appears whole or not at all:
   * concurrent puts of one key leave one of them complete; a put that fails (source error, abort,
   * `maxBytes` passed, backend error) leaves nothing and rejects with the source's error, an
   * AbortError, or a HoistError; `body` is destroyed on failure.
   */
  put(key: string, body: Readable, opts?: PutOptions): Promise<StoredObject>;
  /**
   * Stores an immutable object at `contentAddressedKey(prefix, sha256, suffix)` as `put` does;
   * when that object exists already it is kept as is and this resolves with the same result.
   */
  putContentAddressed(prefix: string, body: Readable, opts?: PutOptions & { suffix?: string }): Promise<StoredObject>;
  /**
   * Opens the object (or `range` of it) for reading; the caller consumes or destroys the stream.
   * Rejects with HoistError('not_found') for a missing key, and 'invalid_request' for a range
   * that is malformed or starts past the last byte.
   */
  get(key: string, range?: ByteRange): Promise<Readable>;
  /**
   * Present when the backend keeps each object as a plain file on this machine: the path of the object at `key`,
   * to read in place of a copy. Rejects with HoistError('not_found') for a missing key. The file is only read;
   * the object may be deleted or put again later, so pass only a key written once (an upload, a content-addressed
   * artifact) and open the file once.
   */
  localFile?(key: string): Promise<string>;
  /** The object's size and modification time, or null when it does not exist. */
  stat(key: string): Promise<ObjectInfo | null>;
  /** Removes the object; a missing key is not an error. */
  delete(key: string): Promise<void>;
  /**
   * Every object whose key starts with `prefix` (a plain string prefix, `''` for all), in
   * lexicographic key order, for cleanup sweeps. Objects being written are never listed.
   */
  list(prefix: string): AsyncIterable<ObjectInfo>;
  /**
   * Present when the backend can take and give bytes directly through presigned URLs (see
   * DirectUploads): `direct_storage_resumable` upload sessions then send no byte through the API.
   */
  readonly direct?: DirectUploads;
}

export const STORAGE = token<Storage>('hoist.Storage');

const SEGMENT = '[a-z0-9_-][a-z0-9._-]*';
const KEY = new RegExp(`^${SEGMENT}(/${SEGMENT})*$`);
const PREFIX = new RegExp(`^(${SEGMENT}/)*(${SEGMENT})?$`);

/** True when `key` is a valid storage key. */
export const isStorageKey = (key: string): boolean => typeof key === 'string' && key.length <= 1024 && KEY.test(key);

/** Returns `key` when it is a valid storage key; throws HoistError('invalid_request') otherwise. */
export function checkKey(key: string): string {
  if (!isStorageKey(key)) throw invalid(`Invalid storage key ${JSON.stringify(key)}`, { key });
  return key;
}

/**
 * Returns `prefix` when some valid key could start with it (or it is `''`); throws HoistError('invalid_request')
 * otherwise.
 */
export function checkPrefix(prefix: string): string {
  if (typeof prefix !== 'string' || prefix.length > 1024 || !PREFIX.test(prefix))
    throw invalid(`Invalid storage prefix ${JSON.stringify(prefix)}`, { prefix });
  return prefix;
}

/** The key of content-addressed bytes: `<prefix>/sha256/<hex><suffix>`, validated. */
export function contentAddressedKey(prefix: string, sha256: string, suffix = ''): string {
  return checkKey(`${prefix}/sha256/${sha256}${suffix}`);
}

/**
 * `range` as inclusive `{start, end}` within an object of `size` bytes (`end` clamped to the last
 * byte); throws HoistError('invalid_request') when it is malformed or starts past the last byte.
 */
export function checkRange(range: ByteRange, size: number): { start: number; end: number } {
  const { start, end = Infinity } = range;
  if (
    !Number.isSafeInteger(start) ||
    start < 0 ||
    start >= size ||
    !(end === Infinity || (Number.isSafeInteger(end) && end >= start))
  ) {
    throw invalid(`Range ${start}-${range.end ?? ''} does not fit an object of ${size} bytes`, { size });
  }
  return { start, end: Math.min(end, size - 1) };
}

/**
 * The chunks of a put's `body` as Buffers (string chunks as UTF-8), hashed and counted on the
 * way: iterating throws HoistError('payload_too_large', {limit}) as soon as they pass `maxBytes`.
 * `digest()` gives their size and SHA-256 once the body has ended.
 */
export function metered(
  body: Readable,
  maxBytes?: number,
): { chunks: AsyncIterable<Buffer>; digest(): { size: number; sha256: string } } {
  const hash = createHash('sha256');
  let size = 0;
  async function* chunks() {
    for await (const c of body as AsyncIterable<Buffer | string>) {
      const chunk = typeof c === 'string' ? Buffer.from(c) : c;
      size += chunk.length;
      if (maxBytes !== undefined && size > maxBytes) {
        throw new HoistError('payload_too_large', `Object is larger than ${maxBytes} bytes`, { limit: maxBytes });
      }
      hash.update(chunk);
      yield chunk;
    }
  }
  return { chunks: chunks(), digest: () => ({ size, sha256: hash.digest('hex') }) };
}

/**
 * A file on this machine holding the object at `key` (a key written once, see Storage.localFile): the object's own
 * file when the backend keeps one, else a copy made at the path `copy` gives.
 */
export async function objectFile(
  storage: Storage,
  key: string,
  copy: () => Promise<string>,
  signal?: AbortSignal,
): Promise<string> {
  if (storage.localFile) return storage.localFile(key);
  const path = await copy();
  await pipeline(await storage.get(key), createWriteStream(path), { signal });
  return path;
}
