import { randomUUID } from 'node:crypto';
import { addAbortSignal, finished, type Readable } from 'node:stream';
import { Client, CopyDestinationOptions, CopySourceOptions } from 'minio';
import { HoistError, invalid, notFound } from '../../core/errors.js';
import type { Lifecycle } from '../../core/plugin.js';
import {
  checkKey,
  checkPrefix,
  checkRange,
  contentAddressedKey,
  isStorageKey,
  MAX_PART_BYTES,
  metered,
  type ByteRange,
  type DirectUploads,
  type ObjectInfo,
  type PutOptions,
  type Storage,
  type StoredObject,
  type UploadedPart,
} from '../../core/ports/storage.js';
import { presignWithHeaders, type SigningKeys } from './presign.js';

/** S3's smallest part (every part of a multipart upload but the last). */
const MIN_PART_BYTES = 5 * 1024 * 1024;
/** Objects up to this size are buffered as their chunks, larger ones in a part-sized buffer. */
const SMALL_BYTES = 1024 * 1024;
/** Content-addressed puts land here first, under a key no valid key can name, so `list` never shows them. */
const TMP_PREFIX = '.tmp/';
/** Temp objects older than this at start belong to a crashed process. */
const STALE_TEMP_MS = 60 * 60 * 1000;
/**
 * Multipart uploads open for longer than this were left by a put that crashed or by an upload
 * session never finished (a session lives at most a day): they are aborted, at start and then
 * every STALE_SWEEP_MS, so their parts stop taking space.
 */
const STALE_UPLOAD_MS = 2 * 24 * 60 * 60 * 1000;
const STALE_SWEEP_MS = 6 * 60 * 60 * 1000;

export interface MinioStorageOptions {
  /** The client Hoist talks to S3 with. */
  client: Client;
  /** The client presigned URLs are signed for (its endpoint is the one clients reach); `client` by default. */
  presigner?: Client;
  bucket: string;
  region: string;
  /** Create the bucket at start when it is missing (else start fails). */
  createBucket: boolean;
  /**
   * Bytes a put buffers per request: objects up to this size take one PUT, larger ones a multipart upload of parts this
   * size.
   */
  partBytes?: number;
  /** Keys one list request asks for (S3 gives at most 1000, the default): `list` holds one such page at a time. */
  listPageKeys?: number;
  /** Where a failed background sweep is reported. */
  warn?(obj: object, msg: string): void;
}

/** The `code` of an S3 error from the minio client. */
const codeOf = (err: unknown) => (err as { code?: string } | null)?.code;
const isMissing = (err: unknown) => ['NoSuchKey', 'NotFound', 'NoSuchObject'].includes(codeOf(err) ?? '');

/** A backend failure as a HoistError (HoistErrors pass through). */
function backendError(err: unknown, what: string): HoistError {
  if (err instanceof HoistError) return err;
  return new HoistError('unavailable', `S3 storage failed to ${what}`, {}, { cause: err });
}

/** Runs an S3 call, turning its failure into a HoistError. */
async function s3<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw backendError(err, what);
  }
}

/** The minio client's ListParts, which its typings mark protected. */
type PartsLister = {
  listParts(bucket: string, key: string, uploadId: string): Promise<{ part: number; size: number; etag: string }[]>;
};

/**
 * Objects in an S3 bucket (MinIO, AWS S3 or any S3-protocol server) through the `minio` client.
 * A put buffers at most one part in memory: an object that fits in one part takes one PUT, a
 * larger one a multipart upload whose parts are sent as they fill (and which is aborted when the
 * put fails), so objects always appear whole. Content-addressed puts land under `.tmp/` and are
 * copied into place once their hash is known.
 */
export class MinioStorage implements Storage, Lifecycle {
  readonly direct: DirectUploads;
  private readonly client: Client;
  private readonly bucket: string;
  private readonly partBytes: number;
  private readonly listPageKeys: number;
  private sweeper?: NodeJS.Timeout;

  constructor(private readonly options: MinioStorageOptions) {
    this.client = options.client;
    this.bucket = options.bucket;
    this.partBytes = Math.max(options.partBytes ?? MIN_PART_BYTES, MIN_PART_BYTES);
    this.listPageKeys = Math.min(Math.max(options.listPageKeys ?? 1000, 1), 1000);
    this.direct = new MinioDirectUploads(options.client, options.presigner ?? options.client, options.bucket);
  }

  /**
   * Checks the server answers and the bucket exists (creating it when configured to), and removes temp objects a crash
   * left.
   */
  async start(): Promise<void> {
    const { client, bucket, region, createBucket } = this.options;
    let exists: boolean;
    try {
      exists = await client.bucketExists(bucket);
    } catch (err) {
      throw new Error(
        `cannot reach the S3 server or check bucket ${bucket}: ${(err as Error).message || codeOf(err)}`,
        { cause: err },
      );
    }
    if (!exists) {
      if (!createBucket)
        throw new Error(
          `bucket ${bucket} does not exist: create it, or set s3CreateBucket (HOIST_S3_CREATE_BUCKET=true)`,
        );
      await client.makeBucket(bucket, region);
    }
    const cutoff = Date.now() - STALE_TEMP_MS;
    for await (const page of this.pages(TMP_PREFIX))
      for (const o of page) if (o.modifiedAt.getTime() < cutoff) await this.client.removeObject(bucket, o.key);
    await this.abortStaleUploads();
    this.sweeper = setInterval(
      () =>
        void this.abortStaleUploads().catch((err) =>
          this.options.warn?.({ err }, 'storage-minio: sweeping stale multipart uploads failed'),
        ),
      STALE_SWEEP_MS,
    ).unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.sweeper);
  }

  /** Aborts the bucket's multipart uploads opened more than STALE_UPLOAD_MS ago; returns how many. */
  async abortStaleUploads(): Promise<number> {
    const cutoff = Date.now() - STALE_UPLOAD_MS;
    let [keyMarker, uploadIdMarker, aborted] = ['', '', 0];
    for (;;) {
      const page = await this.client.listIncompleteUploadsQuery(this.bucket, '', keyMarker, uploadIdMarker, '');
      for (const u of page.uploads) {
        if (!(u.initiated.getTime() < cutoff)) continue;
        await this.client.abortMultipartUpload(this.bucket, u.key, u.uploadId);
        aborted++;
      }
      if (!page.isTruncated) return aborted;
      [keyMarker, uploadIdMarker] = [page.nextKeyMarker, page.nextUploadIdMarker];
    }
  }

  /** Throws when the server does not answer or the bucket is gone. */
  async check(): Promise<void> {
    if (!(await this.client.bucketExists(this.bucket))) throw new Error(`bucket ${this.bucket} does not exist`);
  }

  async put(key: string, body: Readable, opts: PutOptions = {}): Promise<StoredObject> {
    try {
      checkKey(key);
    } catch (err) {
      body.destroy();
      throw err;
    }
    return this.write(key, body, opts);
  }

  async putContentAddressed(
    prefix: string,
    body: Readable,
    { suffix, ...opts }: PutOptions & { suffix?: string } = {},
  ): Promise<StoredObject> {
    try {
      contentAddressedKey(prefix, '0'.repeat(64), suffix);
    } catch (err) {
      body.destroy();
      throw err;
    }
    const tmp = `${TMP_PREFIX}${randomUUID()}`;
    const { size, sha256 } = await this.write(tmp, body, opts);
    const key = contentAddressedKey(prefix, sha256, suffix);
    try {
      if (!(await this.stat(key))) {
        await s3('store an object', () =>
          this.client.copyObject(
            new CopySourceOptions({ Bucket: this.bucket, Object: tmp }),
            new CopyDestinationOptions({ Bucket: this.bucket, Object: key }),
          ),
        );
      }
    } finally {
      await s3('delete a temp object', () => this.client.removeObject(this.bucket, tmp));
    }
    return { key, size, sha256 };
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    checkKey(key);
    try {
      if (!range) return await this.client.getObject(this.bucket, key);
      const info = await this.stat(key);
      if (!info) throw notFound(`Object ${key}`);
      const { start, end } = checkRange(range, info.size);
      return await this.client.getPartialObject(this.bucket, key, start, end - start + 1);
    } catch (err) {
      throw isMissing(err) ? notFound(`Object ${key}`) : backendError(err, 'read an object');
    }
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    checkKey(key);
    try {
      const s = await this.client.statObject(this.bucket, key);
      return { key, size: s.size, modifiedAt: s.lastModified };
    } catch (err) {
      if (isMissing(err)) return null;
      throw backendError(err, 'stat an object');
    }
  }

  async delete(key: string): Promise<void> {
    checkKey(key);
    await s3('delete an object', () => this.client.removeObject(this.bucket, key));
  }

  /**
   * Lists page by page (listPageKeys a request), holding one page at a time. S3 lists in key order; some
   * S3-protocol servers order only within what one answer holds, so each page is sorted, and a page that
   * starts before the one before it ended (such a server, past one page) rejects with HoistError('unavailable')
   * rather than give keys out of order or twice.
   */
  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    checkPrefix(prefix);
    let last: string | null = null;
    for await (const page of this.pages(prefix)) {
      const objects = page.filter((o) => isStorageKey(o.key)).sort((a, b) => (a.key < b.key ? -1 : 1));
      if (!objects.length) continue;
      if (last !== null && objects[0].key <= last)
        throw new HoistError(
          'unavailable',
          `The S3 server listed ${objects[0].key} after ${last}: it does not list keys in order`,
        );
      yield* objects;
      last = objects[objects.length - 1].key;
    }
  }

  /** The objects under `prefix`, valid key or not, one answer of the server at a time. */
  private async *pages(prefix: string): AsyncGenerator<ObjectInfo[]> {
    let token = '';
    for (;;) {
      const page = await s3('list objects', () =>
        this.client.listObjectsV2Query(this.bucket, prefix, token, '', this.listPageKeys, ''),
      );
      yield page.objects.flatMap((o) => (o.name ? [{ key: o.name, size: o.size, modifiedAt: o.lastModified }] : []));
      if (!page.isTruncated) return;
      token = page.nextContinuationToken;
    }
  }

  /**
   * Streams `body` to `key`, hashing and counting it, one part-sized buffer at a time: one PUT
   * when it all fits in the first part, else a multipart upload, aborted when anything fails.
   */
  private async write(key: string, body: Readable, { maxBytes, signal }: PutOptions): Promise<StoredObject> {
    const { client, bucket } = this;
    // The body may fail while a part is being sent: keep that from being an unhandled 'error'
    // (the loop below still sees it, as the stream stays errored).
    finished(body, () => {});
    if (signal) addAbortSignal(signal, body);
    const input = metered(body, maxBytes);
    const etags: { part: number; etag: string }[] = [];
    let uploadId: string | undefined;
    // A small object (a log) is kept as its chunks; a larger one is copied into one part-sized
    // buffer, allocated once and reused for every part, so a put leaves no part-sized garbage.
    let chunks: Buffer[] = [];
    let part: Buffer | undefined;
    let filled = 0;
    const add = (chunk: Buffer) => {
      if (!part && filled + chunk.length <= SMALL_BYTES) chunks.push(chunk);
      else {
        if (!part) {
          part = Buffer.allocUnsafe(this.partBytes);
          Buffer.concat(chunks, filled).copy(part);
          chunks = [];
        }
        chunk.copy(part, filled);
      }
      filled += chunk.length;
    };
    /** The buffered bytes, the buffer emptied (a part buffer is reused once they are sent). */
    const take = () => {
      const bytes = part ? part.subarray(0, filled) : Buffer.concat(chunks, filled);
      chunks = [];
      filled = 0;
      return bytes;
    };
    const sendPart = async () => {
      uploadId ??= await s3('start an upload', () => client.initiateNewMultipartUpload(bucket, key, {}));
      const number = etags.length + 1;
      const id = uploadId;
      const bytes = take();
      const { etag } = await s3('upload a part', () =>
        client.uploadPart(
          { bucketName: bucket, objectName: key, uploadID: id, partNumber: number, headers: {} },
          bytes,
        ),
      );
      etags.push({ part: number, etag });
    };
    try {
      for await (const chunk of input.chunks) {
        for (let at = 0; at < chunk.length;) {
          const n = Math.min(chunk.length - at, this.partBytes - filled);
          add(chunk.subarray(at, at + n));
          at += n;
          if (filled === this.partBytes) await sendPart();
        }
      }
      signal?.throwIfAborted();
      if (uploadId === undefined) {
        const bytes = take();
        await s3('store an object', () => client.putObject(bucket, key, bytes));
      } else {
        if (filled > 0) await sendPart();
        signal?.throwIfAborted();
        const id = uploadId;
        await s3('complete an upload', () => client.completeMultipartUpload(bucket, key, id, etags));
        uploadId = undefined;
      }
      return { key, ...input.digest() };
    } catch (err) {
      body.destroy();
      if (uploadId !== undefined) {
        const id = uploadId;
        await s3('abort an upload', () => client.abortMultipartUpload(bucket, key, id));
      }
      throw err;
    }
  }
}

/** Presigned multipart uploads and downloads in the bucket. */
class MinioDirectUploads implements DirectUploads {
  readonly minPartBytes = MIN_PART_BYTES;

  constructor(
    private readonly client: Client,
    private readonly presigner: Client,
    private readonly bucket: string,
  ) {}

  createMultipart(key: string): Promise<string> {
    checkKey(key);
    return s3('start an upload', () => this.client.initiateNewMultipartUpload(this.bucket, key, {}));
  }

  /**
   * The minio client's presigned UploadPart URL (its addressing style, region and credentials), signed again with
   * Content-Length among the signed headers, as the minio client never does: S3 then refuses a PUT of any other
   * length with 403 SignatureDoesNotMatch and stores nothing of it.
   */
  async partUrl(
    key: string,
    uploadId: string,
    number: number,
    size: number,
    expiresInSeconds: number,
  ): Promise<string> {
    checkKey(key);
    if (!Number.isInteger(number) || number < 1 || number > 10_000)
      throw invalid(`Part number ${number} is not between 1 and 10,000`, { part_number: number });
    if (!Number.isSafeInteger(size) || size < 1 || size > MAX_PART_BYTES)
      throw invalid(`Part size ${size} is not between 1 and ${MAX_PART_BYTES} bytes`, { size });
    return s3('presign a part URL', async () =>
      presignWithHeaders(
        'PUT',
        await this.presigner.presignedUrl('PUT', this.bucket, key, expiresInSeconds, {
          partNumber: String(number),
          uploadId,
        }),
        { 'content-length': String(size) },
        // Read after presignedUrl, which refreshes them when a credentials provider supplies them.
        this.presigner as unknown as SigningKeys,
      ),
    );
  }

  async listParts(key: string, uploadId: string): Promise<UploadedPart[]> {
    checkKey(key);
    try {
      const parts = await (this.client as unknown as PartsLister).listParts(this.bucket, key, uploadId);
      return parts.map((p) => ({ number: p.part, size: p.size, etag: p.etag })).sort((a, b) => a.number - b.number);
    } catch (err) {
      throw codeOf(err) === 'NoSuchUpload'
        ? notFound(`Upload ${uploadId}`)
        : backendError(err, 'list the parts of an upload');
    }
  }

  async completeMultipart(key: string, uploadId: string, parts: { number: number; etag: string }[]): Promise<void> {
    checkKey(key);
    try {
      await this.client.completeMultipartUpload(
        this.bucket,
        key,
        uploadId,
        parts.map((p) => ({ part: p.number, etag: p.etag })),
      );
    } catch (err) {
      const code = codeOf(err);
      if (code === 'NoSuchUpload') throw notFound(`Upload ${uploadId}`);
      if (['InvalidPart', 'InvalidPartOrder', 'EntityTooSmall', 'MalformedXML'].includes(code ?? '')) {
        throw new HoistError(
          'invalid_request',
          `The storage refused the parts: ${(err as Error).message}`,
          { field: 'parts' },
          { cause: err },
        );
      }
      throw backendError(err, 'complete an upload');
    }
  }

  async abortMultipart(key: string, uploadId: string): Promise<void> {
    checkKey(key);
    try {
      await this.client.abortMultipartUpload(this.bucket, key, uploadId);
    } catch (err) {
      if (codeOf(err) !== 'NoSuchUpload') throw backendError(err, 'abort an upload');
    }
  }

  getUrl(key: string, expiresInSeconds: number): Promise<string> {
    checkKey(key);
    return s3('presign a URL', () => this.presigner.presignedGetObject(this.bucket, key, expiresInSeconds));
  }
}
