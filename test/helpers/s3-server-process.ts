// Runs s3rver on 127.0.0.1, port 0, over the directory given as the first argument, and prints
// {"port": N} on one line once it listens. Started by test/helpers/s3-server.ts in a process of
// its own, so that the server's memory and CPU do not count as the tests'.
import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import S3rver from 's3rver';

const require = createRequire(import.meta.url);
const S3Error = require('s3rver/lib/models/error.js') as new (code: string, message: string) => Error;

type Ctx = {
  method: string;
  path: string;
  query: Record<string, string | undefined>;
  headers: Record<string, string | undefined>;
  status: number;
  body: unknown;
  set(name: string, value: string): void;
};
type Middleware = (ctx: Ctx, next: () => Promise<void>) => Promise<void>;

const dir = process.argv[2];
if (!dir) throw new Error('usage: s3-server-process.ts <data directory>');

const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dir });
atomicPuts((server as unknown as { store: Store }).store);
const stack = (server as unknown as { middleware: Middleware[] }).middleware;
// Before the router (the last middleware), after s3rver's XML encoding of object bodies.
stack.splice(stack.length - 1, 0, completions(dir));
const { port } = await server.run();
process.stdout.write(`${JSON.stringify({ port })}\n`);
const stop = () => server.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.stdin.on('close', stop).resume();

type Store = {
  getResourcePath(bucket: string, key: string, resource: string): string;
  putMetadata(bucket: string, key: string, metadata: unknown, md5: string): Promise<void>;
  putObject(object: { bucket: string; key: string; metadata: unknown; content: Buffer | Readable }): Promise<{ size: number; md5: string }>;
};

/**
 * Makes s3rver's object writes atomic, as S3's are: it writes an object in place, so concurrent
 * PUTs of a key mix and a reader can see a partial object. Here the bytes go to a temp file
 * (which its listing skips: the name does not end in `._S3rver_object`) that is renamed into place.
 */
function atomicPuts(store: Store) {
  store.putObject = async function ({ bucket, key, metadata, content }) {
    const path = this.getResourcePath(bucket, key, 'object');
    await mkdir(dirname(path), { recursive: true });
    const tmp = `${path}.${randomUUID()}.partial`;
    const md5 = createHash('md5');
    let size = 0;
    const count = new Transform({
      transform(chunk: Buffer, _enc, done) {
        md5.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    try {
      await pipeline(Buffer.isBuffer(content) ? Readable.from([content]) : content, count, createWriteStream(tmp));
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    const digest = md5.digest('hex');
    await this.putMetadata(bucket, key, metadata, digest);
    return { size, md5: digest };
  };
}

/**
 * What s3rver 3.7 lacks of the S3 API, written per the S3 API reference over s3rver's own files:
 * ListMultipartUploads (GET ?uploads), ListParts (GET ?uploadId), AbortMultipartUpload
 * (DELETE ?uploadId) over its upload records (`<bucket>/._S3rver_uploads/<uploadId>/`), and the
 * range `bytes=0-0`, which s3rver reads as "from 0 to the end".
 */
function completions(root: string): Middleware {
  const uploadsOf = (bucket: string) => join(root, bucket, '._S3rver_uploads');
  const noSuchUpload = () => new S3Error('NoSuchUpload', 'The specified upload does not exist.');
  return async (ctx, next) => {
    const [, bucket, ...rest] = ctx.path.split('/');
    const key = decodeURIComponent(rest.join('/'));
    const uploadId = ctx.query.uploadId;
    if (ctx.method === 'GET' && bucket && !key && 'uploads' in ctx.query) {
      const prefix = ctx.query.prefix ?? '';
      const upload = [];
      for (const id of (await readdir(uploadsOf(bucket)).catch(() => [])).sort()) {
        const uploadKey = await readFile(join(uploadsOf(bucket), id, 'key'), 'utf8').catch(() => null);
        if (uploadKey === null || !uploadKey.startsWith(prefix)) continue;
        const { birthtime } = await stat(join(uploadsOf(bucket), id));
        upload.push({ Key: uploadKey, UploadId: id, Initiated: birthtime.toISOString(), StorageClass: 'STANDARD' });
      }
      ctx.body = { ListMultipartUploadsResult: { Bucket: bucket, KeyMarker: '', UploadIdMarker: '', MaxUploads: 1000, IsTruncated: false, Upload: upload } };
      return;
    }
    if (key && uploadId && (ctx.method === 'GET' || ctx.method === 'DELETE')) {
      const uploadDir = join(uploadsOf(bucket), uploadId.replace(/[^0-9a-f]/g, ''));
      const recordedKey = await readFile(join(uploadDir, 'key'), 'utf8').catch(() => null);
      if (recordedKey !== key) throw noSuchUpload();
      if (ctx.method === 'DELETE') {
        await rm(uploadDir, { recursive: true, force: true });
        ctx.status = 204;
        return;
      }
      const part = [];
      const numbers = (await readdir(uploadDir)).filter((n) => /^\d+$/.test(n)).map(Number).sort((a, b) => a - b);
      for (const n of numbers) {
        const s = await stat(join(uploadDir, String(n)));
        // s3rver writes a part's .md5 once the part is whole: a part without one is still arriving.
        const md5 = await readFile(join(uploadDir, `${n}.md5`), 'utf8').catch(() => null);
        if (md5 !== null) part.push({ PartNumber: n, ETag: `"${md5}"`, Size: s.size, LastModified: s.mtime.toISOString() });
      }
      ctx.body = { ListPartsResult: { Bucket: bucket, Key: key, UploadId: uploadId, IsTruncated: false, Part: part } };
      return;
    }
    if (ctx.method === 'GET' && key && !Object.keys(ctx.query).some((q) => !q.startsWith('X-Amz-')) && /^bytes=0-0$/.test(ctx.headers.range ?? '')) {
      const parts = key.split('/');
      const file = join(root, bucket, ...parts.slice(0, -1), `${parts.at(-1)}._S3rver_object`);
      const fh = await open(file, 'r').catch(() => null);
      if (fh) {
        try {
          const { size } = await fh.stat();
          if (size > 0) {
            const { buffer } = await fh.read(Buffer.alloc(1), 0, 1, 0);
            ctx.status = 206;
            ctx.set('Content-Range', `bytes 0-0/${size}`);
            ctx.body = buffer;
            return;
          }
        } finally {
          await fh.close();
        }
      }
    }
    await next();
  };
}
