// legs: db
import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Operation } from '../../core/entities/operation.js';
import { Project } from '../../core/entities/project.js';
import { UploadSession } from '../../core/entities/upload-session.js';
import { Version } from '../../core/entities/version.js';
import { STORAGE, type Storage } from '../../core/ports/storage.js';
import { noise } from '../helpers/big-zip.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';
import { remoteCli } from '../helpers/remote-cli.js';
import { startS3Server, type S3Server } from '../helpers/s3-server.js';

const MiB = 1 << 20;
const PART = 8 * MiB;

let s3: S3Server;
let h: LiveHoist;
let api: CountingProxy;
let token: string;
const bucket = `e2e-${randomUUID()}`;
/** A static site of two parts: index.html and 9 MiB of incompressible bytes. */
let site: Buffer;

test.before(async () => {
  s3 = await startS3Server();
  h = await liveHoist({ ...s3.config(bucket), healthTimeoutSeconds: 10 });
  api = await countingProxy(h.api);
  ({ token } = await h.login());
  site = await zipOf({ 'index.html': '<h1>straight to storage</h1>', 'blob.bin': Buffer.concat([...noise(9 * MiB)]) });
});
test.after(async () => {
  await api?.close();
  await h?.close();
  await s3?.close();
});

/** A TCP proxy to `target` that counts the bytes clients send through it. */
interface CountingProxy {
  url: string;
  bytesIn(): number;
  close(): Promise<void>;
}
async function countingProxy(target: string): Promise<CountingProxy> {
  const { hostname, port } = new URL(target);
  let bytes = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s)).on('error', () => {});
    }
    client.on('data', (d) => (bytes += d.length));
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    bytesIn: () => bytes,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

const kernel = () => h.running.kernel;
const storage = () => kernel().get<Storage>(STORAGE);
const em = () => kernel().orm.em.fork();
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const sessionOf = async (url: string) =>
  em().findOneOrFail(
    UploadSession,
    { tokenHash: createHash('sha256').update(new URL(url).pathname.split('/')[4]).digest('hex') },
    { disableIdentityMap: true },
  );

type Answer = { status: number; headers: Headers; body: any };
const answer = async (res: Response): Promise<Answer> => {
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: res.headers, body };
};

/** Creates a session through the counting proxy; returns its 201 answer body. */
async function create(body: object): Promise<any> {
  const res = await fetch(`${api.url}/api/v1/upload-sessions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then(answer);
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

/** upload_url as reached through the counting proxy. */
const viaProxy = (url: string) => `${api.url}${new URL(url).pathname}`;

/** PUTs `bytes` to a presigned part URL, straight to storage; returns the ETag. */
async function putPart(url: string, bytes: Buffer): Promise<string> {
  const res = await fetch(url, { method: 'PUT', body: new Uint8Array(bytes) });
  assert.is(res.status, 200, await res.text());
  return res.headers.get('etag')!;
}

/** PUTs every part of `zip` as the session's plan says; returns the completion's parts. */
async function putAll(session: any, zip: Buffer) {
  const parts = [];
  for (const p of session.parts.urls) {
    const start = (p.part_number - 1) * session.parts.part_size;
    parts.push({ part_number: p.part_number, etag: await putPart(p.url, zip.subarray(start, start + p.size)) });
  }
  return parts;
}

/** POSTs the completion JSON to upload_url (through the proxy). */
const complete = (
  url: string,
  body: unknown,
  headers: Record<string, string> = { 'content-type': 'application/json' },
) =>
  fetch(viaProxy(url), { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) }).then(
    answer,
  );

function refused(res: Answer, status: number, code: string) {
  assert.is(res.status, status, JSON.stringify(res.body));
  assert.is(res.body.error?.code, code, JSON.stringify(res.body));
  return res.body.error;
}

/**
 * Everything an upload could leave behind: objects in the bucket, open multipart uploads (other than `open`), versions,
 * operations, projects.
 */
async function snapshot(open: string[] = []) {
  const objects: string[] = [];
  for await (const o of storage().list('')) objects.push(o.key);
  const e = em();
  return {
    objects,
    pending: (await s3.pendingUploads(bucket)).filter((u) => !open.some((id) => u.endsWith(` ${id}`))),
    versions: await e.count(Version, {}),
    operations: await e.count(Operation, {}),
    projects: await e.count(Project, {}),
  };
}

test(
  'direct_storage_resumable on S3: the parts go straight to storage, the API ' +
    'receives none of the bytes, the site deploys',
  async () => {
    const before = api.bytesIn();
    const session = await create({
      name: 'direct-site',
      transport: 'direct_storage_resumable',
      size: site.length,
      filename: 'direct.zip',
    });
    assert.is(session.method, 'POST');
    assert.equal(session.limits, { archive_bytes: 100_000_000 });
    assert.is(session.parts.part_size, PART);
    assert.is(session.parts.count, 2);
    assert.equal(
      session.parts.urls.map((p: any) => [p.part_number, p.size]),
      [
        [1, PART],
        [2, site.length - PART],
      ],
    );
    for (const p of session.parts.urls) {
      assert.ok(p.url.startsWith(`${s3.endpoint}/${bucket}/uploads/`), p.url);
      // Bound to the part's size: storage refuses a PUT of any other length.
      assert.is(new URL(p.url).searchParams.get('X-Amz-SignedHeaders'), 'content-length;host');
    }
    assert.match(session.next_step, /parts\.urls/);
    const row = await sessionOf(session.upload_url);
    assert.ok(row.multipartUploadId);

    // Part 2 first: the order of the PUTs does not matter.
    const [one, two] = session.parts.urls;
    const etag2 = await putPart(two.url, site.subarray(PART));
    const etag1 = await putPart(one.url, site.subarray(0, PART));
    assert.is(await storage().stat(row.storageKey), null, 'nothing is stored before completion');

    const res = await complete(session.upload_url, {
      parts: [
        { part_number: 1, etag: etag1 },
        { part_number: 2, etag: etag2 },
      ],
      sha256: sha256(site),
    });
    assert.is(res.status, 202, JSON.stringify(res.body));
    assert.is(res.body.action, 'local_to_live_queued');
    assert.is(res.body.version.size, site.length);
    assert.is(res.body.version.sha256, sha256(site));
    const sent = api.bytesIn() - before;
    assert.ok(sent < 64 * 1024, `the API received ${sent} bytes for a ${site.length}-byte ZIP`);

    const op = await h.waitFor(token, res.body.operation.id, undefined, 90_000);
    assert.is(op.status, 'succeeded', JSON.stringify(op));
    assert.is((await h.site(hostOf(res.body.project.url))).body, '<h1>straight to storage</h1>');
    const version = await em().findOneOrFail(Version, { id: res.body.version.id });
    assert.is(version.filename, 'direct.zip');
    assert.is((await storage().stat(version.archiveKey))?.size, site.length);
    const done = await sessionOf(session.upload_url);
    assert.ok(done.usedAt);
    assert.is(done.operationId, res.body.operation.id);
    assert.equal(await s3.pendingUploads(bucket), []);

    const again = await snapshot();
    refused(
      await complete(session.upload_url, {
        parts: [
          { part_number: 1, etag: etag1 },
          { part_number: 2, etag: etag2 },
        ],
      }),
      410,
      'gone',
    );
    assert.equal(await snapshot(), again);
  },
);

test('hoist deploy --resumable on S3: the CLI PUTs the parts straight to storage and the site deploys', async () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'hoist-s3-site-')), 'cli-s3-site');
  mkdirSync(dir);
  writeFileSync(join(dir, 'index.html'), '<h1>the CLI went straight to storage</h1>');
  writeFileSync(join(dir, 'blob.bin'), Buffer.concat([...noise(9 * MiB)]));
  const before = api.bytesIn();
  const r = await remoteCli(h).run(['deploy', dir, '--json', '--resumable', '--name', 'cli-s3-site'], undefined, {
    HOIST_TOKEN: token,
    HOIST_API_URL: api.url,
  });
  assert.is(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout.trim().split('\n').at(-1)!);
  assert.is(out.status, 'succeeded', r.stdout);
  const sent = api.bytesIn() - before;
  assert.ok(sent < 1 << 20, `the API received ${sent} bytes of a 9 MiB site`);
  assert.is((await h.site(hostOf(out.url))).body, '<h1>the CLI went straight to storage</h1>');
  assert.equal(await s3.pendingUploads(bucket), []);
});

test('completing with bad parts → 400/413 and nothing is kept; the session can still be completed', async () => {
  const zip = Buffer.concat([site, Buffer.alloc(100)]);
  const session = await create({ name: 'bad-parts', transport: 'direct_storage_resumable', size: zip.length });
  const { multipartUploadId: uploadId, storageKey } = await sessionOf(session.upload_url);
  const [one, two] = session.parts.urls;
  const etag1 = await putPart(one.url, zip.subarray(0, PART));
  const before = await snapshot([uploadId!]);

  const cases: [string, () => Promise<Answer>, number, string, Record<string, unknown>][] = [
    [
      'a missing part',
      () =>
        complete(session.upload_url, {
          parts: [
            { part_number: 1, etag: etag1 },
            { part_number: 2, etag: etag1 },
          ],
        }),
      400,
      'invalid_request',
      { field: 'parts', part_number: 2 },
    ],
    [
      'a part left out',
      () => complete(session.upload_url, { parts: [{ part_number: 1, etag: etag1 }] }),
      400,
      'invalid_request',
      { field: 'parts', size: PART },
    ],
    [
      'parts not from 1',
      () => complete(session.upload_url, { parts: [{ part_number: 2, etag: etag1 }] }),
      400,
      'invalid_request',
      { field: 'parts', part_number: 2 },
    ],
    ['no parts', () => complete(session.upload_url, { parts: [] }), 400, 'invalid_request', {}],
    [
      'an unknown field',
      () => complete(session.upload_url, { parts: [{ part_number: 1, etag: etag1 }], size: 5 }),
      400,
      'invalid_request',
      {},
    ],
    [
      'a body that is not JSON',
      () => complete(session.upload_url, 'parts=1', { 'content-type': 'text/plain' }),
      400,
      'invalid_request',
      { field: 'content-type' },
    ],
    [
      'a malformed sha256',
      () => complete(session.upload_url, { parts: [{ part_number: 1, etag: etag1 }], sha256: 'abc' }),
      400,
      'invalid_request',
      {},
    ],
    [
      'a tus PATCH',
      () =>
        fetch(viaProxy(session.upload_url), {
          method: 'PATCH',
          headers: {
            'tus-resumable': '1.0.0',
            'content-type': 'application/offset+octet-stream',
            'upload-offset': '0',
          },
          body: 'x',
        }).then(answer),
      400,
      'invalid_request',
      { field: 'transport' },
    ],
  ];
  const check = async (cases: [string, () => Promise<Answer>, number, string, Record<string, unknown>][]) => {
    for (const [what, request, status, code, details] of cases) {
      const error = refused(await request(), status, code);
      for (const [k, v] of Object.entries(details))
        assert.is(error.details?.[k], v, `${what}: ${JSON.stringify(error)}`);
      assert.equal(await snapshot([uploadId!]), before, what);
      assert.is((await sessionOf(session.upload_url)).usedAt, null, `${what}: the session is not spent`);
    }
  };
  await check(cases);
  assert.is(
    (await fetch(viaProxy(session.upload_url), { method: 'HEAD', headers: { 'tus-resumable': '1.0.0' } })).status,
    400,
    'no tus HEAD',
  );

  // A part URL takes its planned size only: a byte too many, or the part of another session, is refused by storage.
  for (const body of [Buffer.concat([zip.subarray(PART), Buffer.from('!')]), zip.subarray(0, PART)]) {
    const res = await fetch(two.url, { method: 'PUT', body: new Uint8Array(body) });
    assert.is(res.status, 403, await res.text());
    assert.equal(await snapshot([uploadId!]), before);
    assert.equal(
      (await storage().direct!.listParts(storageKey, uploadId!)).map((p) => p.number),
      [1],
    );
  }
  // Part 2 stored with a byte too many all the same (by a client holding Hoist's S3 keys, or by a server that does
  // not check signed headers): completion still refuses what passes the declared size.
  const { etag: big } = await s3.client.uploadPart(
    { bucketName: bucket, objectName: storageKey, uploadID: uploadId!, partNumber: 2, headers: {} },
    Buffer.concat([zip.subarray(PART), Buffer.from('!')]),
  );
  await check([
    [
      'a wrong ETag',
      () =>
        complete(session.upload_url, {
          parts: [
            { part_number: 1, etag: etag1 },
            { part_number: 2, etag: etag1 },
          ],
        }),
      400,
      'invalid_request',
      { field: 'parts', part_number: 2 },
    ],
    [
      'parts past the declared size',
      () =>
        complete(session.upload_url, {
          parts: [
            { part_number: 1, etag: etag1 },
            { part_number: 2, etag: big },
          ],
        }),
      413,
      'payload_too_large',
      { limit: zip.length },
    ],
  ]);
  assert.is(await storage().stat(storageKey), null);

  // The part sent again replaces it, and the session completes.
  const etag2 = await putPart(two.url, zip.subarray(PART));
  const res = await complete(session.upload_url, {
    parts: [
      { part_number: 1, etag: `"${etag1.replace(/"/g, '')}"` },
      { part_number: 2, etag: etag2 },
    ],
  });
  assert.is(res.status, 202, JSON.stringify(res.body));
  assert.is(res.body.version.sha256, sha256(zip));
  await h.waitFor(token, res.body.operation.id, undefined, 90_000);
  assert.equal(await s3.pendingUploads(bucket), []);
});

test('a sha256 that differs → 400; the joined ZIP is deleted and the URL is spent', async () => {
  const zip = await zipOf({ 'index.html': 'checked' });
  const session = await create({ name: 'bad-hash', transport: 'direct_storage_resumable', size: zip.length });
  assert.is(session.parts.count, 1);
  const etag = await putPart(session.parts.urls[0].url, zip);
  const { multipartUploadId } = await sessionOf(session.upload_url);
  const before = await snapshot([multipartUploadId!]);
  const error = refused(
    await complete(session.upload_url, { parts: [{ part_number: 1, etag }], sha256: sha256(Buffer.from('other')) }),
    400,
    'invalid_request',
  );
  assert.is(error.details.field, 'sha256');
  assert.equal(await snapshot(), before);
  refused(await complete(session.upload_url, { parts: [{ part_number: 1, etag }] }), 410, 'gone');
});

test('one session completed twice at once: one 202, one 410', async () => {
  const zip = await zipOf({ 'index.html': 'raced' });
  const session = await create({ name: 'raced-complete', transport: 'direct_storage_resumable', size: zip.length });
  const parts = await putAll(session, zip);
  const answers = await Promise.all([complete(session.upload_url, { parts }), complete(session.upload_url, { parts })]);
  assert.equal(answers.map((a) => a.status).sort(), [202, 410], JSON.stringify(answers.map((a) => a.body)));
  const op = await h.waitFor(token, answers.find((a) => a.status === 202)!.body.operation.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is(await em().count(Version, { projectId: answers.find((a) => a.status === 202)!.body.project.id }), 1);
});

test(
  'an expired session → 410, and its parts are discarded from storage (also by the ' +
    'sweep when it is never used again)',
  async () => {
    const zip = await zipOf({ 'index.html': 'late' });
    const before = await snapshot();
    const late = await create({ name: 'late', transport: 'direct_storage_resumable', size: zip.length });
    const forgotten = await create({ name: 'forgotten', transport: 'direct_storage_resumable', size: zip.length });
    const parts = await putAll(late, zip);
    await putAll(forgotten, zip);
    assert.is((await s3.pendingUploads(bucket)).length, 2);
    for (const s of [late, forgotten])
      await em().nativeUpdate(UploadSession, { id: s.id }, { expiresAt: new Date(Date.now() - 1000) });

    refused(await complete(late.upload_url, { parts }), 410, 'gone');
    assert.is((await s3.pendingUploads(bucket)).length, 1, "the expired session's upload is aborted");
    // Creating a session sweeps the account's expired ones.
    await create({ name: 'sweeper' });
    assert.equal(await snapshot(), before);
    refused(await complete(late.upload_url, { parts }), 410, 'gone');
  },
);

test.run();
