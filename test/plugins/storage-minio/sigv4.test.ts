// The test S3 server (test/helpers/s3-server-process.ts) verifies AWS Signature Version 4 as S3
// does: what storage-minio signs, and the presigned URLs it hands out, are checked for real there.
import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import aws4 from 'aws4';
import { Client } from 'minio';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createLogger } from '../../../adapters/logger.js';
import { loadConfig } from '../../../config/load.js';
import type { HoistConfig } from '../../../config/schema.js';
import { HoistError } from '../../../core/errors.js';
import type { Storage } from '../../../core/ports/storage.js';
import storageMinio from '../../../plugins/storage-minio/index.js';
import { presignWithHeaders } from '../../../plugins/storage-minio/presign.js';
import { startS3Server, type S3Server } from '../../helpers/s3-server.js';

const s3: S3Server = await startS3Server();
const { port } = new URL(s3.endpoint);
const bucket = `sig-${randomUUID()}`;
await s3.client.makeBucket(bucket, 'us-east-1');
await s3.client.putObject(bucket, 'artifacts/page.html', Buffer.from('<h1>signed</h1>'));

/** A storage-minio plugin instance on the bucket, with `overrides` to its configuration. */
async function plugin(overrides: Partial<HoistConfig> = {}): Promise<Storage> {
  const config = loadConfig({}, { ...s3.config(bucket, false), ...overrides });
  return (await storageMinio.create({ config, log: createLogger('silent') })) as Storage;
}

/** A minio client of the server with another secret key or region. */
const clientWith = (over: { secretKey?: string; region?: string }) =>
  new Client({
    endPoint: '127.0.0.1',
    port: Number(port),
    useSSL: false,
    accessKey: s3.accessKey,
    secretKey: s3.secretKey,
    region: 'us-east-1',
    ...over,
  });

/** The status of an S3 answer and the Code, Message (and other fields) of its XML error. */
async function answer(res: Response) {
  const xml = await res.text();
  const field = (name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];
  return { status: res.status, code: field('Code'), message: field('Message'), field };
}

/** `url` with the character at `at` of its X-Amz-Signature changed. */
function withSignatureChanged(url: string, at = 10): string {
  const u = new URL(url);
  const sig = u.searchParams.get('X-Amz-Signature')!;
  u.searchParams.set('X-Amz-Signature', sig.slice(0, at) + (sig[at] === '0' ? '1' : '0') + sig.slice(at + 1));
  return u.toString();
}

/** Headers aws4 signed for a request, less those fetch sets itself (the same values). */
function signedBy(request: aws4.Request, secretAccessKey: string): Record<string, string> {
  const { headers } = aws4.sign(
    { host: `127.0.0.1:${port}`, service: 's3', region: 'us-east-1', ...request },
    { accessKeyId: s3.accessKey, secretAccessKey },
  );
  return Object.fromEntries(
    Object.entries(headers as Record<string, string>).filter(([name]) => !/^(host|content-length)$/i.test(name)),
  );
}

const exists = (key: string) =>
  s3.client.statObject(bucket, key).then(
    () => true,
    (e) => (e.code === 'NotFound' ? false : Promise.reject(e)),
  );

test('a request signed with a wrong secret key is refused: 403 SignatureDoesNotMatch, nothing is written', async () => {
  const wrong = clientWith({ secretKey: 'wrong' });
  const put = await wrong.putObject(bucket, 'artifacts/forged.txt', Buffer.from('forged')).then(
    () => null,
    (e) => e,
  );
  assert.is(put?.code, 'SignatureDoesNotMatch', String(put));
  assert.is(await exists('artifacts/forged.txt'), false);
  // A HEAD answer has no body: the status is all there is (the minio client reads 403 as AccessDenied).
  const stat = await wrong.statObject(bucket, 'artifacts/page.html').then(
    () => null,
    (e) => e,
  );
  assert.is(stat?.code, 'AccessDenied', String(stat));
  // The S3 calls the test server adds to s3rver (ListMultipartUploads here) are verified too.
  const lister = wrong as unknown as { listIncompleteUploadsQuery(...a: string[]): Promise<unknown> };
  assert.is(
    (
      await lister.listIncompleteUploadsQuery(bucket, '', '', '', '').then(
        () => null,
        (e) => e,
      )
    )?.code,
    'SignatureDoesNotMatch',
  );
  // Through the plugin: the failure is the storage's 'unavailable', the S3 code its cause.
  const storage = await plugin({ s3SecretKey: 'wrong' });
  const err = await storage.put('artifacts/forged.txt', Readable.from([Buffer.from('forged')])).then(
    () => null,
    (e) => e,
  );
  assert.instance(err, HoistError);
  assert.is(err.code, 'unavailable');
  assert.is((err.cause as { code?: string }).code, 'SignatureDoesNotMatch');
  assert.is(await exists('artifacts/forged.txt'), false);
  // The right key works, through the plugin too.
  assert.is((await s3.client.statObject(bucket, 'artifacts/page.html')).size, 15);
  const ok = await plugin();
  assert.equal(await ok.put('artifacts/real.txt', Readable.from([Buffer.from('real')])), {
    key: 'artifacts/real.txt',
    size: 4,
    sha256: createHash('sha256').update('real').digest('hex'),
  });
});

test('the S3 error carries the canonical request the server computed, as S3 does', async () => {
  const path = `/${bucket}/artifacts/page.html`;
  const res = await answer(
    await fetch(`${s3.endpoint}${path}`, { headers: signedBy({ path, method: 'GET' }, 'wrong') }),
  );
  assert.is(res.status, 403);
  assert.is(res.code, 'SignatureDoesNotMatch');
  assert.match(
    res.field('CanonicalRequest') ?? '',
    new RegExp(`^GET\n/${bucket}/artifacts/page.html\n\nhost:127.0.0.1:${port}\n`),
  );
  assert.match(
    res.field('StringToSign') ?? '',
    /^AWS4-HMAC-SHA256\n\d{8}T\d{6}Z\n\d{8}\/us-east-1\/s3\/aws4_request\n[0-9a-f]{64}$/,
  );
  // The same request signed with the right key, by aws4 rather than the minio client, is answered.
  const ok = await fetch(`${s3.endpoint}${path}`, { headers: signedBy({ path, method: 'GET' }, s3.secretKey) });
  assert.is(ok.status, 200);
  assert.is(await ok.text(), '<h1>signed</h1>');
});

test(
  'a presigned GET URL works as handed out; with one character of its signature ' +
    'changed, or for another key, it is refused 403',
  async () => {
    const storage = await plugin();
    const url = await storage.direct!.getUrl('artifacts/page.html', 60);
    const res = await fetch(url);
    assert.is(res.status, 200);
    assert.is(await res.text(), '<h1>signed</h1>');
    assert.is(await fetch(url, { headers: { range: 'bytes=4-9' } }).then((r) => r.text()), 'signed');

    for (const at of [0, 10, 63]) {
      const bad = await answer(await fetch(withSignatureChanged(url, at)));
      assert.is(bad.status, 403);
      assert.is(bad.code, 'SignatureDoesNotMatch');
    }
    const other = await answer(await fetch(url.replace('/artifacts/page.html?', '/artifacts/real.txt?')));
    assert.is(other.status, 403);
    assert.is(other.code, 'SignatureDoesNotMatch');
    // A presigned GET is no PUT.
    const put = await answer(await fetch(url, { method: 'PUT', body: 'overwritten' }));
    assert.is(put.status, 403);
    assert.is(put.code, 'SignatureDoesNotMatch');
    assert.is(await fetch(url).then((r) => r.text()), '<h1>signed</h1>');
  },
);

test(
  'a presigned part URL takes its part; another part number, upload id or a changed ' + 'signature is refused',
  async () => {
    const d = (await plugin()).direct!;
    const id = await d.createMultipart('uploads/direct.zip');
    const url = await d.partUrl('uploads/direct.zip', id, 1, 4, 60);
    const bad = await answer(await fetch(withSignatureChanged(url), { method: 'PUT', body: 'part' }));
    assert.is(bad.status, 403);
    assert.is(bad.code, 'SignatureDoesNotMatch');
    const renumbered = await answer(
      await fetch(url.replace('partNumber=1', 'partNumber=2'), { method: 'PUT', body: 'part' }),
    );
    assert.is(renumbered.status, 403);
    assert.is(renumbered.code, 'SignatureDoesNotMatch');
    const otherId = await d.createMultipart('uploads/direct.zip');
    const moved = await answer(
      await fetch(url.replace(`uploadId=${id}`, `uploadId=${otherId}`), { method: 'PUT', body: 'part' }),
    );
    assert.is(moved.status, 403);
    assert.is(moved.code, 'SignatureDoesNotMatch');
    assert.equal(await d.listParts('uploads/direct.zip', id), []);
    assert.equal(await d.listParts('uploads/direct.zip', otherId), []);
    await d.abortMultipart('uploads/direct.zip', otherId);
    const ok = await fetch(url, { method: 'PUT', body: 'part' });
    assert.is(ok.status, 200, await ok.text());
    assert.equal(
      (await d.listParts('uploads/direct.zip', id)).map((p) => [p.number, p.size]),
      [[1, 4]],
    );
    await d.abortMultipart('uploads/direct.zip', id);
  },
);

test(
  'a part URL signs its Content-Length: another length is 403 SignatureDoesNotMatch and stores nothing; ' +
    "the re-signing agrees with the minio client's own signatures",
  async () => {
    const d = (await plugin()).direct!;
    const id = await d.createMultipart('uploads/sized.zip');
    const url = await d.partUrl('uploads/sized.zip', id, 1, 4, 60);
    assert.is(new URL(url).searchParams.get('X-Amz-SignedHeaders'), 'content-length;host');
    for (const body of ['par', 'parts', 'x'.repeat(1 << 20)]) {
      const res = await answer(await fetch(url, { method: 'PUT', body }));
      assert.is(res.status, 403, body.slice(0, 10));
      assert.is(res.code, 'SignatureDoesNotMatch');
      assert.match(res.field('CanonicalRequest') ?? '', /\ncontent-length:\d+\nhost:/);
    }
    assert.equal(await d.listParts('uploads/sized.zip', id), []);
    assert.is((await fetch(url, { method: 'PUT', body: 'part' })).status, 200);
    await d.abortMultipart('uploads/sized.zip', id);

    // With no header added, the re-signed URL is the minio client's, signature and all: both sign alike.
    for (const [method, query] of [
      ['PUT', { partNumber: '7', uploadId: 'a1b2c3' }],
      ['GET', {}],
    ] as const) {
      const minio = await s3.client.presignedUrl(method, bucket, 'uploads/some-key_1.zip', 600, query);
      const again = presignWithHeaders(method, minio, {}, { secretKey: s3.secretKey });
      assert.equal(
        Object.fromEntries(new URL(again).searchParams),
        Object.fromEntries(new URL(minio).searchParams),
        method,
      );
      assert.is(new URL(again).pathname, new URL(minio).pathname);
    }
  },
);

test('a presigned URL past its expiry is refused: 403 AccessDenied "Request has expired"', async () => {
  const storage = await plugin();
  const url = await storage.direct!.getUrl('artifacts/page.html', 1);
  const part = await storage.direct!.partUrl(
    'uploads/late.zip',
    await storage.direct!.createMultipart('uploads/late.zip'),
    1,
    4,
    1,
  );
  await sleep(2000);
  const res = await answer(await fetch(url));
  assert.is(res.status, 403);
  assert.is(res.code, 'AccessDenied');
  assert.is(res.message, 'Request has expired');
  assert.is(res.field('X-Amz-Expires'), '1');
  const late = await answer(await fetch(part, { method: 'PUT', body: 'late' }));
  assert.is(late.status, 403);
  assert.is(late.message, 'Request has expired');
});

test('a body that is not the one whose sha256 was signed is refused: 400 XAmzContentSHA256Mismatch', async () => {
  const path = `/${bucket}/artifacts/swapped.txt`;
  // Signed for the body 'good' (content-length 4 is signed too: the swapped body is as long).
  const headers = signedBy({ path, method: 'PUT', body: 'good' }, s3.secretKey);
  const swapped = await answer(await fetch(`${s3.endpoint}${path}`, { method: 'PUT', headers, body: 'evil' }));
  assert.is(swapped.status, 400);
  assert.is(swapped.code, 'XAmzContentSHA256Mismatch');
  assert.is(await exists('artifacts/swapped.txt'), false);
  const ok = await fetch(`${s3.endpoint}${path}`, { method: 'PUT', headers, body: 'good' });
  assert.is(ok.status, 200, await ok.text());
  assert.is(
    await s3.client
      .getObject(bucket, 'artifacts/swapped.txt')
      .then(async (s) => Buffer.concat(await s.toArray()).toString()),
    'good',
  );
});

test('unsigned requests, unsigned x-amz-* headers and a wrong region are refused', async () => {
  const anonymous = await answer(await fetch(`${s3.endpoint}/${bucket}/artifacts/page.html`));
  assert.is(anonymous.status, 403);
  assert.is(anonymous.code, 'AccessDenied');
  const url = await (await plugin()).direct!.getUrl('artifacts/page.html', 60);
  const extra = await answer(await fetch(url, { headers: { 'x-amz-meta-extra': 'x' } }));
  assert.is(extra.status, 403);
  assert.is(extra.code, 'AccessDenied');
  assert.is(extra.field('HeadersNotSigned'), 'x-amz-meta-extra');
  const region = await clientWith({ region: 'eu-west-1' })
    .putObject(bucket, 'artifacts/elsewhere.txt', Buffer.from('x'))
    .then(
      () => null,
      (e) => e,
    );
  assert.is(region?.code, 'AuthorizationHeaderMalformed', String(region));
  assert.is(await exists('artifacts/elsewhere.txt'), false);
});

test.after(async () => {
  for await (const o of s3.client.listObjectsV2(bucket, '', true)) await s3.client.removeObject(bucket, o.name!);
  await s3.client.removeBucket(bucket);
  await s3.close();
});

test.run();
