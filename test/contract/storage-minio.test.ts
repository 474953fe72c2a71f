import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { setImmediate as tick } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../config/load.js';
import type { HoistConfig } from '../../config/schema.js';
import { boot, KernelError } from '../../adapters/kernel.js';
import { createLogger } from '../../adapters/logger.js';
import { HoistError } from '../../core/errors.js';
import { STORAGE, type Storage } from '../../core/ports/storage.js';
import storageMinio from '../../plugins/storage-minio/index.js';
import { MinioStorage } from '../../plugins/storage-minio/minio-storage.js';
import { startS3Server, type S3Server } from '../helpers/s3-server.js';
import { bytesOf, storageContract } from './storage.js';

const s3: S3Server = await startS3Server();

/** A storage-minio plugin instance on a fresh bucket of the test server, started. */
async function fresh(overrides: Partial<HoistConfig> = {}) {
  const bucket = `t-${randomUUID()}`;
  const config = loadConfig({}, { ...s3.config(bucket), ...overrides });
  const storage = (await storageMinio.create({ config, log: createLogger('silent') })) as MinioStorage;
  await storage.start();
  /** Every object in the bucket, valid key or not. */
  const raw = async () => {
    const out: string[] = [];
    for await (const o of s3.client.listObjectsV2(bucket, '', true)) out.push(o.name!);
    return out;
  };
  return {
    bucket,
    storage: storage as Storage,
    raw,
    leftovers: async () => [
      ...(await raw()).filter((k) => k.startsWith('.tmp/')),
      ...(await s3.pendingUploads(bucket)),
    ],
    cleanup: async () => {
      for (const key of await raw()) await s3.client.removeObject(bucket, key);
      for (const u of await s3.pendingUploads(bucket))
        await s3.client.abortMultipartUpload(bucket, ...(u.split(' ') as [string, string]));
      await s3.client.removeBucket(bucket);
    },
  };
}

storageContract('storage-minio', () => fresh());

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const MiB = 1 << 20;

/** `total` bytes of a pattern, in 64 KiB chunks. */
function pattern(total: number): { body: () => Readable; bytes: Buffer } {
  const bytes = Buffer.alloc(total);
  for (let i = 0; i + 4 <= total; i += 4) bytes.writeUInt32LE(i, i);
  const body = () =>
    Readable.from(
      (function* () {
        for (let at = 0; at < total; at += 64 * 1024) yield bytes.subarray(at, at + 64 * 1024);
      })(),
    );
  return { body, bytes };
}

test(
  'an object larger than a part (a multipart upload) reads back with the same ' +
    'sha256; ranges cross part boundaries',
  async () => {
    const s = await fresh();
    const { body, bytes } = pattern(12 * MiB + 12345);
    const res = await s.storage.put('artifacts/big.bin', body());
    assert.equal(res, { key: 'artifacts/big.bin', size: bytes.length, sha256: sha(bytes) });
    assert.is(sha(await bytesOf(await s.storage.get('artifacts/big.bin'))), sha(bytes));
    const at = 5 * MiB - 3;
    assert.ok(
      (await bytesOf(await s.storage.get('artifacts/big.bin', { start: at, end: at + 9 }))).equals(
        bytes.subarray(at, at + 10),
      ),
    );
    assert.is((await s.storage.stat('artifacts/big.bin'))?.size, bytes.length);
    const ca = await s.storage.putContentAddressed('artifacts', body(), { suffix: '.zip' });
    assert.is(ca.key, `artifacts/sha256/${sha(bytes)}.zip`);
    assert.is(sha(await bytesOf(await s.storage.get(ca.key))), sha(bytes));
    assert.equal(await s.leftovers(), []);
    await s.cleanup();
  },
);

test('a put aborted after parts went out leaves no object and no pending multipart upload', async () => {
  const s = await fresh();
  const src = new Readable({ read() {} });
  const ac = new AbortController();
  const put = s.storage.put('uploads/aborted.zip', src, { signal: ac.signal });
  for (let i = 0; i < 12; i++) src.push(Buffer.alloc(MiB, i));
  // Wait until the multipart upload is open and has a part: the abort must clean that up.
  for (
    const end = Date.now() + 20_000;
    (
      await s.storage
        .direct!.listParts('uploads/aborted.zip', (await s3.pendingUploads(s.bucket))[0]?.split(' ')[1] ?? 'none')
        .catch(() => [])
    ).length === 0;
    await tick()
  ) {
    if (Date.now() > end) throw new Error('no part was ever uploaded');
  }
  ac.abort();
  const err = await put.then(
    () => null,
    (e) => e,
  );
  assert.is(err?.name, 'AbortError');
  assert.is(await s.storage.stat('uploads/aborted.zip'), null);
  assert.equal(await s.raw(), []);
  assert.equal(await s3.pendingUploads(s.bucket), []);

  const over = await s.storage.put('uploads/over.zip', pattern(11 * MiB).body(), { maxBytes: 10 * MiB }).then(
    () => null,
    (e) => e,
  );
  assert.is(over?.code, 'payload_too_large');
  assert.equal(await s.raw(), []);
  assert.equal(await s3.pendingUploads(s.bucket), []);
  await s.cleanup();
});

test('direct: a presigned GET URL gives the object over plain HTTP, with ranges', async () => {
  const s = await fresh();
  await s.storage.put('artifacts/page.html', Readable.from([Buffer.from('<h1>presigned</h1>')]));
  const url = await s.storage.direct!.getUrl('artifacts/page.html', 60);
  assert.ok(url.startsWith(`${s3.endpoint}/${s.bucket}/artifacts/page.html?`), url);
  const res = await fetch(url);
  assert.is(res.status, 200);
  assert.is(await res.text(), '<h1>presigned</h1>');
  const part = await fetch(url, { headers: { range: 'bytes=4-12' } });
  assert.is(part.status, 206);
  assert.is(await part.text(), 'presigned');
  const query = new URL(url).searchParams;
  assert.is(query.get('X-Amz-Expires'), '60');
  assert.match(query.get('X-Amz-Signature') ?? '', /^[0-9a-f]{64}$/);
  await s.cleanup();
});

test(
  'direct: parts PUT to presigned URLs, listed, completed into a whole object; ' + 'abort discards an upload',
  async () => {
    const s = await fresh();
    const d = s.storage.direct!;
    const { bytes } = pattern(6 * MiB);
    const id = await d.createMultipart('uploads/direct.zip');
    const etags = [];
    for (const [n, part] of [
      [1, bytes.subarray(0, 5 * MiB)],
      [2, bytes.subarray(5 * MiB)],
    ] as const) {
      const res = await fetch(await d.partUrl('uploads/direct.zip', id, n, part.length, 60), {
        method: 'PUT',
        body: new Uint8Array(part),
      });
      assert.is(res.status, 200, await res.text());
      etags.push({ number: n, etag: res.headers.get('etag')!.replace(/"/g, '') });
    }
    assert.equal(await d.listParts('uploads/direct.zip', id), [
      { number: 1, size: 5 * MiB, etag: etags[0].etag },
      { number: 2, size: MiB, etag: etags[1].etag },
    ]);
    assert.is(await s.storage.stat('uploads/direct.zip'), null, 'nothing appears before completion');
    await d.completeMultipart('uploads/direct.zip', id, etags);
    assert.is(sha(await bytesOf(await s.storage.get('uploads/direct.zip'))), sha(bytes));
    assert.equal(await s3.pendingUploads(s.bucket), []);

    const dropped = await d.createMultipart('uploads/dropped.zip');
    await fetch(await d.partUrl('uploads/dropped.zip', dropped, 1, 1, 60), { method: 'PUT', body: 'x' });
    await d.abortMultipart('uploads/dropped.zip', dropped);
    await d.abortMultipart('uploads/dropped.zip', dropped);
    assert.equal(await s3.pendingUploads(s.bucket), []);
    const gone = await d.listParts('uploads/dropped.zip', dropped).then(
      () => null,
      (e) => e,
    );
    assert.instance(gone, HoistError);
    assert.is(gone.code, 'not_found');
    assert.equal(await s.raw(), ['uploads/direct.zip']);
    await s.cleanup();
  },
);

test(
  'start fails naming the plugin when the server is unreachable or the bucket is ' + 'missing; creates it when told',
  async () => {
    const dataDir = `/tmp/hoist-minio-${randomUUID()}`;
    const bootWith = (over: Partial<HoistConfig>) =>
      boot(loadConfig({}, { dataDir, ...over }), {}).then(
        (k) => k.stop().then(() => null),
        (e) => e,
      );
    const missing = `m-${randomUUID()}`;
    const noBucket = await bootWith(s3.config(missing, false));
    assert.instance(noBucket, KernelError);
    assert.match(noBucket.message, /plugin storage-minio failed to start: bucket m-[0-9a-f-]+ does not exist/);
    assert.not.ok(await s3.client.bucketExists(missing));
    const unreachable = await bootWith({ ...s3.config(missing), s3Endpoint: 'http://127.0.0.1:1' });
    assert.instance(unreachable, KernelError);
    assert.match(unreachable.message, /plugin storage-minio failed to start: cannot reach the S3 server/);
    const noKey = await bootWith({ ...s3.config(missing), s3SecretKey: undefined });
    assert.match(
      noKey.message,
      /plugin storage-minio is misconfigured: s3SecretKey \(HOIST_S3_SECRET_KEY\) is required/,
    );

    const kernel = await boot(loadConfig({}, { dataDir, ...s3.config(missing, true) }));
    try {
      assert.ok(await s3.client.bucketExists(missing));
      const storage = kernel.get<Storage>(STORAGE);
      assert.instance(storage, MinioStorage);
      assert.equal((await kernel.ready()).checks['storage-minio'], 'ok');
    } finally {
      await kernel.stop();
      await s3.client.removeBucket(missing);
    }
  },
);

// The last suite to run: the server goes with it.
test.after(() => s3.close());

test.run();
