// `list` goes page by page, holding one page at a time, in key order across pages; a server that
// lists out of order past one page gets a clear error, never keys out of order or twice.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Client } from 'minio';
import { HoistError } from '../../../core/errors.js';
import type { Storage } from '../../../core/ports/storage.js';
import { MinioStorage } from '../../../plugins/storage-minio/minio-storage.js';
import { startS3Server, type S3Server } from '../../helpers/s3-server.js';

let s3: S3Server;
let n = 0;
/** The list requests the storage's client made. */
let requests = 0;

test.before(async () => {
  s3 = await startS3Server();
});
test.after(async () => s3?.close());

/** A started storage on a fresh bucket, listing `listPageKeys` keys a request, whose client counts list requests. */
async function fresh(listPageKeys?: number): Promise<{ storage: Storage; bucket: string }> {
  const { hostname, port } = new URL(s3.endpoint);
  const client = new Client({
    endPoint: hostname,
    port: Number(port),
    useSSL: false,
    accessKey: s3.accessKey,
    secretKey: s3.secretKey,
  });
  const query = client.listObjectsV2Query.bind(client);
  client.listObjectsV2Query = (...args) => {
    requests++;
    return query(...args);
  };
  const bucket = `list-pages-${++n}`;
  const storage = new MinioStorage({ client, bucket, region: 'us-east-1', createBucket: true, listPageKeys });
  await storage.start();
  return { storage, bucket };
}

/** Puts `keys` behind the storage's back (any key, valid or not), 16 at a time. */
async function put(bucket: string, keys: string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 16)
    await Promise.all(keys.slice(i, i + 16).map((k) => s3.client.putObject(bucket, k, Buffer.from(k))));
}

const numbered = (count: number) =>
  Array.from({ length: count }, (_, i) => `uploads/${String(i).padStart(4, '0')}.zip`);

test('more objects than one page of the server (1000) are all listed, in order', async () => {
  const { storage, bucket } = await fresh();
  const keys = numbered(1003);
  await put(bucket, [...keys, 'uploads/Not-A-Key.zip']);
  requests = 0;
  const listed: string[] = [];
  for await (const o of storage.list('uploads/')) {
    listed.push(o.key);
    assert.is(o.size, o.key.length);
  }
  assert.equal(listed, keys);
  assert.is(requests, 2);
});

test('pages are asked for as the listing is read, not before', async () => {
  const { storage, bucket } = await fresh(10);
  const keys = numbered(35);
  await put(bucket, keys);
  requests = 0;
  const it = storage.list('uploads/')[Symbol.asyncIterator]();
  assert.is((await it.next()).value?.key, keys[0]);
  assert.is(requests, 1, 'one page read for the first key');
  const rest: string[] = [];
  for (let r = await it.next(); !r.done; r = await it.next()) rest.push(r.value.key);
  assert.equal(rest, keys.slice(1));
  assert.is(requests, 4);
  // A listing left early asks for no more.
  requests = 0;
  for await (const o of storage.list('uploads/')) if (o) break;
  assert.is(requests, 1);
});

test('a server listing out of key order past one page: a clear error, never a key out of order or twice', async () => {
  // s3rver walks its folders: logs/op/ comes before logs/op-2/, though "logs/op-2/" < "logs/op/".
  const { storage, bucket } = await fresh(2);
  await put(bucket, ['logs/op/x.log', 'logs/op-2/y.log', 'logs/op-3/z.log']);
  const listed: string[] = [];
  const err = await (async () => {
    for await (const o of storage.list('logs/')) listed.push(o.key);
  })().then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(err instanceof HoistError, String(err));
  assert.is((err as HoistError).code, 'unavailable');
  assert.match((err as HoistError).message, 'does not list keys in order');
  assert.equal(listed, [...listed].sort());
  assert.is(new Set(listed).size, listed.length);
});

test.run();
