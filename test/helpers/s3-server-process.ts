// Runs s3rver on 127.0.0.1, port 0, over the directory given as the first argument, and prints
// {"port": N} on one line once it listens. Started by test/helpers/s3-server.ts in a process of
// its own, so that the server's memory and CPU do not count as the tests'. Unlike plain s3rver it
// verifies AWS Signature Version 4 as S3 does (verifySigV4 below), so a wrongly signed request or
// presigned URL fails here as it would on S3 or MinIO.
import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { PassThrough, Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import aws4 from 'aws4';
import S3rver from 's3rver';

const require = createRequire(import.meta.url);
type S3ErrorType = Error & { status: number; expose: boolean };
const S3Error = require('s3rver/lib/models/error.js') as new (
  code: string,
  message: string,
  detail?: Record<string, string>,
) => S3ErrorType;
/** s3rver's accounts by access key id (its one account has the key pair S3RVER / S3RVER). */
const accounts = (
  require('s3rver/lib/models/account.js') as { registry: Map<string, { accessKeys: Map<string, string> }> }
).registry;

type Ctx = {
  method: string;
  path: string;
  /** The request line's target as received (path and query, still percent-encoded). */
  originalUrl: string;
  /** The request body, as s3rver's handlers read it. */
  req: Readable;
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
// Before the router (the last middleware), after s3rver's XML encoding of object bodies; every
// request is verified before anything answers it.
stack.splice(stack.length - 1, 0, verifySigV4(), completions(dir));
const { port } = await server.run();
process.stdout.write(`${JSON.stringify({ port })}\n`);
const stop = () => server.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.stdin.on('close', stop).resume();

/** The region of this server's buckets (a MinIO server's default, and Hoist's s3Region default). */
const REGION = 'us-east-1';
/** How far a header-signed request's x-amz-date may be from the server's clock, as on S3. */
const MAX_SKEW_MS = 15 * 60 * 1000;
/** The longest X-Amz-Expires S3 accepts: a week. */
const MAX_EXPIRES_SECONDS = 7 * 24 * 3600;
const ALGORITHM = 'AWS4-HMAC-SHA256';

/** `20240102T030405Z` as epoch milliseconds, NaN when it is not that form. */
function amzDate(value: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  return m ? Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]) : NaN;
}

const isoSeconds = (ms: number) => new Date(ms).toISOString().replace(/\.\d+/, '');

/**
 * Verifies AWS Signature Version 4 as S3 does, which s3rver does not (it takes any V4 signature
 * made with a known access key), on every request: signed by an Authorization header or presigned
 * (X-Amz-* query parameters). The canonical request and signature are computed by the `aws4`
 * package from the request as received, over the headers it names as signed; a mismatch is 403
 * SignatureDoesNotMatch, carrying the canonical request and string to sign, as S3's does. Also as
 * on S3: a presigned URL past X-Amz-Date + X-Amz-Expires is 403 AccessDenied "Request has
 * expired"; x-amz-* headers and Host must be signed; a payload hash (x-amz-content-sha256) must
 * match the body (400 XAmzContentSHA256Mismatch), or be UNSIGNED-PAYLOAD; the credential scope
 * must name this region and s3; unsigned (anonymous) requests are refused, as by a private
 * bucket, and so are V2 signatures. CORS preflights (OPTIONS) are never signed and pass.
 * Streaming-signed payloads (STREAMING-AWS4-HMAC-SHA256-PAYLOAD, aws-chunked bodies) are refused
 * as not implemented: the minio client never sends them (it sends the hex sha256 of each body
 * over http, UNSIGNED-PAYLOAD over https).
 */
function verifySigV4(): Middleware {
  return async (ctx, next) => {
    if (ctx.method === 'OPTIONS') return next();
    const { authorization } = ctx.headers;
    const param = (name: string) => {
      const v: unknown = ctx.query[name];
      return typeof v === 'string' ? v : undefined;
    };
    const byHeader = authorization !== undefined;
    const byQuery = 'X-Amz-Algorithm' in ctx.query;
    if (!byHeader && !byQuery) {
      if ('Signature' in ctx.query)
        throw new S3Error(
          'InvalidRequest',
          `The authorization mechanism you have provided is not supported. Please use ${ALGORITHM}.`,
        );
      throw new S3Error('AccessDenied', 'Access Denied');
    }
    if (byHeader && byQuery) {
      throw new S3Error(
        'InvalidArgument',
        'Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, ' +
          'Signature query string parameter or the Authorization header should be specified',
      );
    }
    const malformed = (message: string, detail?: Record<string, string>) =>
      byHeader
        ? new S3Error('AuthorizationHeaderMalformed', `The authorization header is malformed; ${message}`, detail)
        : new S3Error('AuthorizationQueryParametersError', message, detail);

    let credential: string | undefined;
    let signedHeaders: string | undefined;
    let provided: string | undefined;
    let datetime: string;
    const now = Date.now();
    if (byHeader) {
      if (!authorization.startsWith(`${ALGORITHM} `)) {
        throw new S3Error(
          'InvalidRequest',
          `The authorization mechanism you have provided is not supported. Please use ${ALGORITHM}.`,
        );
      }
      const fields = new Map(
        authorization
          .slice(ALGORITHM.length + 1)
          .split(',')
          .map((f) => [f.slice(0, f.indexOf('=')).trim(), f.slice(f.indexOf('=') + 1).trim()] as const),
      );
      credential = fields.get('Credential');
      signedHeaders = fields.get('SignedHeaders');
      provided = fields.get('Signature');
      if (!credential || !signedHeaders || !provided)
        throw malformed(
          'the authorization header requires three components: Credential, SignedHeaders, and Signature.',
        );
      datetime = ctx.headers['x-amz-date'] ?? '';
      const at = amzDate(datetime);
      if (Number.isNaN(at))
        throw new S3Error('AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
      if (Math.abs(now - at) > MAX_SKEW_MS) {
        throw new S3Error(
          'RequestTimeTooSkewed',
          'The difference between the request time and the current time is too large.',
          {
            RequestTime: datetime,
            ServerTime: isoSeconds(now),
            MaxAllowedSkewMilliseconds: String(MAX_SKEW_MS),
          },
        );
      }
    } else {
      if (param('X-Amz-Algorithm') !== ALGORITHM) throw malformed(`X-Amz-Algorithm only supports "${ALGORITHM}"`);
      credential = param('X-Amz-Credential');
      signedHeaders = param('X-Amz-SignedHeaders');
      provided = param('X-Amz-Signature');
      const expires = param('X-Amz-Expires');
      datetime = param('X-Amz-Date') ?? '';
      if (!credential || !signedHeaders || !provided || !datetime || expires === undefined) {
        throw malformed(
          'Query-string authentication version 4 requires the X-Amz-Algorithm, ' +
            'X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and ' +
            'X-Amz-Expires parameters.',
        );
      }
      const at = amzDate(datetime);
      if (Number.isNaN(at)) throw malformed(`X-Amz-Date must be in the ISO8601 Long Format "yyyyMMdd'T'HHmmss'Z'"`);
      if (!/^\d+$/.test(expires)) throw malformed('X-Amz-Expires should be a number');
      if (+expires > MAX_EXPIRES_SECONDS)
        throw malformed(
          `X-Amz-Expires must be less than a week (in seconds); that is, the given ` +
            `X-Amz-Expires must be less than ${MAX_EXPIRES_SECONDS} seconds`,
        );
      if (at - now > MAX_SKEW_MS) throw new S3Error('AccessDenied', 'Request is not valid yet');
      if (now > at + +expires * 1000) {
        throw new S3Error('AccessDenied', 'Request has expired', {
          'X-Amz-Expires': expires,
          Expires: isoSeconds(at + +expires * 1000),
          ServerTime: isoSeconds(now),
        });
      }
    }

    const scope = credential.split('/');
    if (scope.length !== 5)
      throw malformed('the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".');
    const [accessKeyId, date, region, service, terminal] = scope;
    if (terminal !== 'aws4_request')
      throw malformed(`incorrect terminal "${terminal}". This endpoint uses "aws4_request".`);
    if (service !== 's3') throw malformed(`incorrect service "${service}". This endpoint belongs to "s3".`);
    if (region !== REGION)
      throw malformed(`the region '${region}' is wrong; expecting '${REGION}'`, { Region: REGION });
    if (date !== datetime.slice(0, 8))
      throw malformed(
        `Invalid credential date "${date}". This date is not the same as X-Amz-Date: "${datetime.slice(0, 8)}".`,
      );
    const secretAccessKey = accounts.get(accessKeyId)?.accessKeys.get(accessKeyId);
    if (secretAccessKey === undefined) {
      throw new S3Error('InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.', {
        AWSAccessKeyId: accessKeyId,
      });
    }

    const signed = signedHeaders.split(';');
    const notSigned = Object.keys(ctx.headers).filter(
      (h) => (h === 'host' || h.startsWith('x-amz-')) && !signed.includes(h),
    );
    if (notSigned.length)
      throw new S3Error('AccessDenied', 'There were headers present in the request which were not signed', {
        HeadersNotSigned: notSigned.join(', '),
      });

    const payloadHash = byHeader ? ctx.headers['x-amz-content-sha256'] : 'UNSIGNED-PAYLOAD';
    if (payloadHash === undefined)
      throw new S3Error('InvalidRequest', 'Missing required header for this request: x-amz-content-sha256');
    if (payloadHash.startsWith('STREAMING-')) {
      throw new S3Error(
        'NotImplemented',
        `This test server does not verify streaming-signed payloads (x-amz-content-sha256: ${payloadHash}).`,
      );
    }
    if (payloadHash !== 'UNSIGNED-PAYLOAD' && !/^[0-9a-f]{64}$/.test(payloadHash)) {
      throw new S3Error(
        'InvalidArgument',
        'x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, or a valid sha256 value.',
        {
          ArgumentName: 'x-amz-content-sha256',
          ArgumentValue: payloadHash,
        },
      );
    }

    // The request as received: its method, its path (a '+' in it is a plus sign to S3, where aws4
    // would read a space) and query (less X-Amz-Signature), the headers it says it signed.
    const q = ctx.originalUrl.indexOf('?');
    const path = (q < 0 ? ctx.originalUrl : ctx.originalUrl.slice(0, q)).replace(/\+/g, '%2B');
    const query =
      q < 0
        ? ''
        : ctx.originalUrl
            .slice(q + 1)
            .split('&')
            .filter((p) => p && !/^X-Amz-Signature(=|$)/.test(p))
            .join('&');
    const request: aws4.Request & { extraHeadersToInclude: Record<string, boolean> } = {
      method: ctx.method,
      path: query ? `${path}?${query}` : path,
      headers: Object.fromEntries(signed.map((h) => [h, ctx.headers[h] ?? ''])),
      service,
      region,
      signQuery: byQuery,
      doNotModifyHeaders: true,
      // aws4 leaves a few headers (range among them) out of its canonical headers unless told.
      extraHeadersToInclude: Object.fromEntries(signed.map((h) => [h, true])),
    };
    const signer = new aws4.RequestSigner(request, { accessKeyId, secretAccessKey });
    signer.datetime = datetime;
    if (signer.signature() !== provided) {
      throw new S3Error(
        'SignatureDoesNotMatch',
        'The request signature we calculated does not match the signature you provided. ' +
          'Check your key and signing method.',
        {
          AWSAccessKeyId: accessKeyId,
          StringToSign: signer.stringToSign(),
          SignatureProvided: provided,
          CanonicalRequest: signer.canonicalString(),
        },
      );
    }

    if (payloadHash !== 'UNSIGNED-PAYLOAD') {
      const chunks: Buffer[] = [];
      for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      const computed = createHash('sha256').update(body).digest('hex');
      if (computed !== payloadHash) {
        throw Object.assign(
          new S3Error(
            'XAmzContentSHA256Mismatch',
            "The provided 'x-amz-content-sha256' header does not match what was computed.",
            {
              ClientComputedContentSHA256: payloadHash,
              S3ComputedContentSHA256: computed,
            },
          ),
          { status: 400, expose: true },
        );
      }
      // s3rver's handlers read the body from ctx.req: give them the bytes read here.
      ctx.req = new PassThrough().end(body);
    }
    await next();
  };
}

type Store = {
  getResourcePath(bucket: string, key: string, resource: string): string;
  putMetadata(bucket: string, key: string, metadata: unknown, md5: string): Promise<void>;
  putObject(object: {
    bucket: string;
    key: string;
    metadata: unknown;
    content: Buffer | Readable;
  }): Promise<{ size: number; md5: string }>;
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
        // When its key was recorded: the upload's start (a test may age it with utimes).
        const { mtime } = await stat(join(uploadsOf(bucket), id, 'key'));
        upload.push({ Key: uploadKey, UploadId: id, Initiated: mtime.toISOString(), StorageClass: 'STANDARD' });
      }
      ctx.body = {
        ListMultipartUploadsResult: {
          Bucket: bucket,
          KeyMarker: '',
          UploadIdMarker: '',
          MaxUploads: 1000,
          IsTruncated: false,
          Upload: upload,
        },
      };
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
      const numbers = (await readdir(uploadDir))
        .filter((n) => /^\d+$/.test(n))
        .map(Number)
        .sort((a, b) => a - b);
      for (const n of numbers) {
        const s = await stat(join(uploadDir, String(n)));
        // s3rver writes a part's .md5 once the part is whole: a part without one is still arriving.
        const md5 = await readFile(join(uploadDir, `${n}.md5`), 'utf8').catch(() => null);
        if (md5 !== null)
          part.push({ PartNumber: n, ETag: `"${md5}"`, Size: s.size, LastModified: s.mtime.toISOString() });
      }
      ctx.body = { ListPartsResult: { Bucket: bucket, Key: key, UploadId: uploadId, IsTruncated: false, Part: part } };
      return;
    }
    if (
      ctx.method === 'GET' &&
      key &&
      !Object.keys(ctx.query).some((q) => !q.startsWith('X-Amz-')) &&
      /^bytes=0-0$/.test(ctx.headers.range ?? '')
    ) {
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
