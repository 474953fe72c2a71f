// legs: db
import { createHash } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Version } from '../../core/entities/version.js';
import { STORAGE, type Storage } from '../../core/ports/storage.js';
import { liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';
import { Form, footprint, rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { noise, storedZip } from '../helpers/big-zip.js';

const ARCHIVE_MAX = 95_000_000;
const ENVELOPE = 100_000_000;
const MiB = 1 << 20;

let h: LiveHoist;
let token: string;
let zip: Buffer;
test.before(async () => {
  h = await liveHoist();
  ({ token } = await h.login());
  zip = await zipOf({ 'index.html': 'hi' });
});
test.after(async () => h?.close());

const kernel = () => h.running.kernel;
const auth = () => ({ authorization: `Bearer ${token}` });

/** Sends a whole (small) body with its Content-Length and returns the answer. */
async function send(
  body: Buffer | string,
  contentType: string | null,
  path = '/api/v1/local-to-live',
  headers: Record<string, string> = auth(),
): Promise<RawResponse> {
  const conn = await rawRequest(h.api, 'POST', path, {
    ...headers,
    ...(contentType ? { 'content-type': contentType } : {}),
    'content-length': Buffer.byteLength(body),
  });
  await conn.write(body);
  return conn.response;
}

/** Sends a multipart body of `parts` ([name, value, filename?]). */
const sendForm = (parts: [string, Buffer | string, string?][], path?: string, headers?: Record<string, string>) => {
  const form = new Form();
  return send(form.body(parts), form.contentType, path, headers);
};

/** Asserts an error answer with `status` and `code`, and returns its error object. */
function refused(res: RawResponse, status: number, code: string) {
  assert.is(res.status, status, JSON.stringify(res));
  assert.is(res.body.error?.code, code, JSON.stringify(res.body));
  assert.type(res.body.error.request_id, 'string');
  return res.body.error;
}

/** Polls until nothing is left over compared with `before` (stores settle a moment after the answer). */
async function unchanged(before: Awaited<ReturnType<typeof footprint>>, ms = 3000) {
  const end = Date.now() + ms;
  for (;;) {
    const now = await footprint(kernel());
    if (JSON.stringify(now) === JSON.stringify(before) || Date.now() > end) return assert.equal(now, before);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('the 202 answer has the shape of the spec', async () => {
  const res = await h.upload(token, '/api/v1/local-to-live', zip, { name: 'shape' });
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  assert.ok(
    ['action', 'project', 'operation', 'next_step'].every((k) => k in body),
    JSON.stringify(body),
  );
  assert.is(body.action, 'local_to_live_queued');
  assert.match(body.project.url, /^http:\/\/shape\.localhost:\d+\/$/);
  assert.equal(Object.keys(body.operation).sort(), ['id', 'progress', 'status']);
  assert.match(body.operation.id, /^[0-9a-f-]{36}$/);
  assert.is(body.operation.status, 'running');
  assert.is(body.operation.progress, 5);
  assert.match(body.next_step, new RegExp(`GET /api/v1/operations/${body.operation.id}`));
  assert.is((await h.waitFor(token, body.operation.id)).status, 'succeeded');
});

test('a ZIP of exactly 95,000,000 bytes streams into storage, hashed and counted (202)', async () => {
  const form = new Form();
  const head = Buffer.concat([form.part('name', 'biggest'), form.head('file', 'big.zip')]);
  const tail = Buffer.concat([Buffer.from('\r\n'), form.end()]);
  const conn = await rawRequest(h.api, 'POST', '/api/v1/local-to-live', {
    ...auth(),
    'content-type': form.contentType,
    'content-length': head.length + ARCHIVE_MAX + tail.length,
  });
  const sha = createHash('sha256');
  let size = 0;
  await conn.write(head);
  for (const c of storedZip(ARCHIVE_MAX)) {
    sha.update(c);
    size += c.length;
    await conn.write(c);
  }
  await conn.write(tail);
  assert.is(size, ARCHIVE_MAX);
  const res = await conn.response;
  assert.is(res.status, 202, JSON.stringify(res));
  assert.is(res.body.version.size, ARCHIVE_MAX);
  assert.is(res.body.version.sha256, sha.digest('hex'));
  const version = await kernel().orm.em.fork().findOneOrFail(Version, { id: res.body.version.id });
  assert.is(version.archiveSize, ARCHIVE_MAX);
  assert.is((await kernel().get<Storage>(STORAGE).stat(version.archiveKey))?.size, ARCHIVE_MAX);
  // No index.html in it: the chain fails at Analyze, which is not what this test is about.
  await h.waitFor(token, res.body.operation.id, undefined, 60_000);
});

test('a ZIP of 95,000,001 bytes → 413 payload_too_large; nothing stored, no operation', async () => {
  const before = await footprint(kernel());
  const form = new Form();
  const head = Buffer.concat([form.part('name', 'too-big'), form.head('file', 'big.zip')]);
  const tail = Buffer.concat([Buffer.from('\r\n'), form.end()]);
  const conn = await rawRequest(h.api, 'POST', '/api/v1/local-to-live', {
    ...auth(),
    'content-type': form.contentType,
    'content-length': head.length + ARCHIVE_MAX + 1 + tail.length,
  });
  await conn.write(head);
  for (const c of noise(ARCHIVE_MAX + 1)) await conn.write(c);
  await conn.write(tail);
  const error = refused(await conn.response, 413, 'payload_too_large');
  assert.is(error.details.limit, ARCHIVE_MAX);
  await unchanged(before);
});

test('a Content-Length over 100,000,000 → 413 before a byte of the body is read', async () => {
  const before = await footprint(kernel());
  const form = new Form();
  const conn = await rawRequest(h.api, 'POST', '/api/v1/local-to-live', {
    ...auth(),
    'content-type': form.contentType,
    'content-length': ENVELOPE + 1,
  });
  const res = await conn.response;
  const error = refused(res, 413, 'payload_too_large');
  assert.is(error.details.limit, ENVELOPE);
  assert.is(res.headers.connection, 'close');
  await unchanged(before);
});

/**
 * Sends a chunked body (no Content-Length): `first(form)`, then `filler` until the server stops it; returns the answer
 * and the bytes sent.
 */
async function chunked(first: (form: Form) => Buffer, filler: Buffer): Promise<{ res: RawResponse; sent: number }> {
  const form = new Form();
  const conn = await rawRequest(h.api, 'POST', '/api/v1/local-to-live', {
    ...auth(),
    'content-type': form.contentType,
    'transfer-encoding': 'chunked',
  });
  let settled = false;
  void conn.response.then(() => (settled = true));
  let sent = 0;
  for (let b = first(form); !settled && sent < 3 * ENVELOPE; b = filler) {
    if (!(await conn.write(Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')]))))
      break;
    sent += b.length;
  }
  const res = await conn.response;
  conn.socket.destroy();
  return { res, sent };
}

/** The answer to an over-long chunked body: 413, unless the reset of the closed connection beat it to the client. */
function bounded({ res, sent }: { res: RawResponse; sent: number }, limit: number) {
  assert.ok(sent < limit + 32 * MiB, `sent ${sent}`);
  if (res.status) assert.is(refused(res, 413, 'payload_too_large').details.limit, limit);
  else assert.ok(res.error, JSON.stringify(res));
}

test('a chunked body is bounded: an endless preamble → 413 once 100,000,000 bytes are read', async () => {
  const before = await footprint(kernel());
  bounded(await chunked(() => Buffer.alloc(MiB, 'x'), Buffer.alloc(MiB, 'x')), ENVELOPE);
  await unchanged(before);
});

test('a chunked body is bounded: an endless file part → 413 at 95,000,001 bytes', async () => {
  const before = await footprint(kernel());
  const filler = Buffer.alloc(MiB, 'z');
  bounded(
    await chunked((f) => Buffer.concat([f.part('name', 'endless'), f.head('file', 'endless.zip'), filler]), filler),
    ARCHIVE_MAX,
  );
  await unchanged(before);
});

/** Sends a chunked body of `total` bytes: a preamble of filler (which multipart ignores), then a small valid form. */
async function chunkedOfSize(total: number, name: string): Promise<RawResponse> {
  const form = new Form();
  const tail = Buffer.concat([
    Buffer.from('\r\n'),
    form.body([
      ['name', name],
      ['file', zip, 'site.zip'],
    ]),
  ]);
  const conn = await rawRequest(h.api, 'POST', '/api/v1/local-to-live', {
    ...auth(),
    'content-type': form.contentType,
    'transfer-encoding': 'chunked',
  });
  const chunk = (b: Buffer) => Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')]);
  const filler = Buffer.alloc(MiB, 'x');
  for (let left = total - tail.length; left > 0; left -= MiB)
    await conn.write(chunk(left >= MiB ? filler : filler.subarray(0, left)));
  await conn.write(chunk(tail));
  await conn.write('0\r\n\r\n');
  return conn.response;
}

test('a chunked body of exactly 100,000,000 bytes is accepted (202)', async () => {
  const res = await chunkedOfSize(ENVELOPE, 'chunked-max');
  assert.is(res.status, 202, JSON.stringify(res));
  assert.is((await h.waitFor(token, res.body.operation.id)).status, 'succeeded');
});

test('a chunked body of 100,000,001 bytes → 413 payload_too_large; nothing stored', async () => {
  const before = await footprint(kernel());
  const error = refused(await chunkedOfSize(ENVELOPE + 1, 'chunked-over'), 413, 'payload_too_large');
  assert.is(error.details.limit, ENVELOPE);
  await unchanged(before);
});

test("a ZIP over the plan's archive_bytes → 403 plan_restricted; no project created, nothing stored", async () => {
  const free = await h.login('free');
  const before = await footprint(kernel());
  const form = new Form();
  const size = 50_000_001;
  const head = Buffer.concat([form.part('name', 'over-plan'), form.head('file', 'big.zip')]);
  const tail = Buffer.concat([Buffer.from('\r\n'), form.end()]);
  const conn = await rawRequest(h.api, 'POST', '/api/v1/local-to-live', {
    authorization: `Bearer ${free.token}`,
    'content-type': form.contentType,
    'content-length': head.length + size + tail.length,
  });
  await conn.write(head);
  for (const c of noise(size)) await conn.write(c);
  await conn.write(tail);
  const res = await conn.response;
  assert.is(refused(res, 403, 'plan_restricted').details.feature, 'archive_bytes');
  await unchanged(before);
});

const half = () => zip.subarray(0, zip.length >> 1);
/** Sends the body `text(form)` as multipart with the form's boundary. */
const rawForm = (text: (f: Form) => string) => {
  const form = new Form();
  return send(text(form), form.contentType);
};
/** A form whose name part declares content-type application/json. */
const jsonPart = Object.assign(
  () => {
    const f = jsonPart.form;
    return Buffer.concat([
      Buffer.from(
        `--${f.boundary}\r\ncontent-disposition: form-data; name="name"\r\ncontent-type: ` +
          `application/json\r\n\r\n{"a":1}\r\n`,
      ),
      f.body([['file', zip, 'a.zip']]),
    ]);
  },
  { form: new Form() },
);
const malformed: [string, () => Promise<RawResponse>, number, string, string?][] = [
  ['no file part', () => sendForm([['name', 'nofile']]), 400, 'invalid_request', 'file'],
  [
    'two file parts',
    () =>
      sendForm([
        ['name', 'two'],
        ['file', zip, 'a.zip'],
        ['file', zip, 'b.zip'],
      ]),
    400,
    'invalid_request',
    'file',
  ],
  [
    'the ZIP in a part with another name',
    () =>
      sendForm([
        ['name', 'other'],
        ['archive', zip, 'a.zip'],
      ]),
    400,
    'invalid_request',
    'archive',
  ],
  [
    'an unknown text part',
    () =>
      sendForm([
        ['name', 'unknown'],
        ['colour', 'red'],
        ['file', zip, 'a.zip'],
      ]),
    400,
    'invalid_request',
    'colour',
  ],
  [
    'an unknown text part after the file',
    () =>
      sendForm([
        ['name', 'unknown'],
        ['file', zip, 'a.zip'],
        ['colour', 'red'],
      ]),
    400,
    'invalid_request',
    'colour',
  ],
  [
    'a repeated text part',
    () =>
      sendForm([
        ['name', 'a'],
        ['name', 'b'],
        ['file', zip, 'a.zip'],
      ]),
    400,
    'invalid_request',
    'name',
  ],
  [
    'a repeated text part after the file',
    () =>
      sendForm([
        ['name', 'a'],
        ['file', zip, 'a.zip'],
        ['name', 'b'],
      ]),
    400,
    'invalid_request',
    'name',
  ],
  [
    'a text part over 64 KiB',
    () =>
      sendForm([
        ['name', 'n'.repeat(65 * 1024)],
        ['file', zip, 'a.zip'],
      ]),
    400,
    'invalid_request',
    'name',
  ],
  [
    'an empty name',
    () =>
      sendForm([
        ['name', ' '],
        ['file', zip, 'a.zip'],
      ]),
    400,
    'invalid_request',
    'name',
  ],
  [
    'a bad visibility',
    () =>
      sendForm([
        ['name', 'vis'],
        ['visibility', 'everyone'],
        ['file', zip, 'a.zip'],
      ]),
    400,
    'invalid_request',
    'visibility',
  ],
  [
    'a bad skip_build',
    () =>
      sendForm([
        ['name', 'skip'],
        ['skip_build', 'maybe'],
        ['file', zip, 'a.zip'],
      ]),
    400,
    'invalid_request',
    'skip_build',
  ],
  [
    'a bad clear_cache',
    () =>
      sendForm([
        ['name', 'clear'],
        ['clear_cache', 'please'],
        ['file', zip, 'a.zip'],
      ]),
    400,
    'invalid_request',
    'clear_cache',
  ],
  [
    'a root_directory outside the archive',
    () =>
      sendForm([
        ['name', 'root'],
        ['root_directory', '../up'],
        ['file', zip, 'a.zip'],
      ]),
    400,
    'invalid_request',
    'root_directory',
  ],
  [
    'a multipart content type without boundary',
    () =>
      send(
        new Form().body([
          ['name', 'nb'],
          ['file', zip, 'a.zip'],
        ]),
        'multipart/form-data',
      ),
    400,
    'invalid_request',
  ],
  ['a JSON body', () => send('{"name":"json"}', 'application/json'), 400, 'invalid_request', 'content-type'],
  ['a body without content type', () => send('name=x', null), 400, 'invalid_request', 'content-type'],
  ['an empty multipart body', () => send('', new Form().contentType), 400, 'invalid_request', 'file'],
  ['multipart garbage', () => send(Buffer.alloc(4096, 'garbage '), new Form().contentType), 400, 'invalid_request'],
  [
    'a body that ends inside the file part',
    () => {
      const form = new Form();
      return send(Buffer.concat([form.part('name', 'cut'), form.head('file', 'a.zip'), half()]), form.contentType);
    },
    400,
    'invalid_request',
  ],
  [
    'a file part whose headers never end',
    () => {
      const form = new Form();
      return send(
        Buffer.concat([
          form.part('name', 'cut'),
          Buffer.from(`--${form.boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.zip"\r\n`),
        ]),
        form.contentType,
      );
    },
    400,
    'invalid_request',
  ],
  [
    'a text part named file',
    () =>
      sendForm([
        ['name', 'textfile'],
        ['file', 'not a file'],
      ]),
    400,
    'invalid_request',
    'file',
  ],
  ['a JSON text part', () => send(jsonPart(), jsonPart.form.contentType), 400, 'invalid_request', 'name'],
  [
    'a part named __proto__',
    () =>
      sendForm([
        ['name', 'proto'],
        ['__proto__', 'x'],
        ['file', zip, 'a.zip'],
      ]),
    400,
    'invalid_request',
  ],
  [
    'a file part named constructor',
    () =>
      sendForm([
        ['name', 'proto'],
        ['constructor', zip, 'a.zip'],
      ]),
    400,
    'invalid_request',
  ],
  [
    'parts without a name',
    () =>
      rawForm(
        (f) =>
          `--${f.boundary}\r\ncontent-disposition: ` +
          `form-data\r\n\r\nx\r\n--${f.boundary}\r\n\r\ny\r\n--${f.boundary}--\r\n`,
      ),
    400,
    'invalid_request',
  ],
  [
    'a part header of 100 KiB',
    () =>
      rawForm(
        (f) =>
          `--${f.boundary}\r\ncontent-disposition: form-data; name="file"; ` +
          `filename="a.zip"\r\nx-pad: ` +
          `${'p'.repeat(100 * 1024)}\r\n\r\nzz\r\n--${f.boundary}--\r\n`,
      ),
    400,
    'invalid_request',
  ],
  [
    'a thousand empty parts',
    () => rawForm((f) => `--${f.boundary}\r\n\r\n\r\n`.repeat(1000) + `--${f.boundary}--\r\n`),
    400,
    'invalid_request',
  ],
  [
    'an invalid Idempotency-Key',
    () =>
      sendForm(
        [
          ['name', 'idem'],
          ['file', zip, 'a.zip'],
        ],
        undefined,
        { ...auth(), 'idempotency-key': 'has spaces in it' },
      ),
    400,
    'invalid_request',
    'Idempotency-Key',
  ],
  [
    'no bearer token',
    () =>
      sendForm(
        [
          ['name', 'anon'],
          ['file', zip, 'a.zip'],
        ],
        undefined,
        {},
      ),
    401,
    'unauthorized',
  ],
];

for (const [what, request, status, code, field] of malformed) {
  test(`${what} → ${status} ${code}; nothing stored`, async () => {
    const before = await footprint(kernel());
    const error = refused(await request(), status, code);
    if (field) assert.is(error.details.field, field, JSON.stringify(error));
    await unchanged(before);
  });
}

test('a body cut short by the client (half sent, then the write side closed) is refused; nothing stored', async () => {
  const before = await footprint(kernel());
  const form = new Form();
  const body = Buffer.concat([
    form.part('name', 'half'),
    form.head('file', 'a.zip'),
    Buffer.alloc(2 * MiB, 'y'),
    Buffer.from('\r\n'),
    form.end(),
  ]);
  const conn = await rawRequest(h.api, 'POST', '/api/v1/local-to-live', {
    ...auth(),
    'content-type': form.contentType,
    'content-length': body.length,
  });
  await conn.write(body.subarray(0, body.length >> 1));
  conn.socket.end();
  const res = await conn.response;
  assert.is(res.status, 400, JSON.stringify(res));
  await unchanged(before);
});

test('a client that disconnects mid-upload leaves nothing behind, and the server still answers', async () => {
  const before = await footprint(kernel());
  const form = new Form();
  const conn = await rawRequest(h.api, 'POST', '/api/v1/local-to-live', {
    ...auth(),
    'content-type': form.contentType,
    'content-length': 20 * MiB,
  });
  await conn.write(Buffer.concat([form.part('name', 'gone'), form.head('file', 'a.zip')]));
  for (let i = 0; i < 4; i++) await conn.write(Buffer.alloc(MiB, 'd'));
  await new Promise((r) => setTimeout(r, 200));
  conn.socket.destroy();
  await new Promise((r) => setTimeout(r, 300));
  await unchanged(before);
  const res = await h.upload(token, '/api/v1/local-to-live', zip, { name: 'after-disconnect' });
  assert.is(res.status, 202);
  await h.waitFor(token, (await res.json()).operation.id);
});

test("project level: another account's project → 404; nothing stored", async () => {
  const other = await h.login();
  const own = await (await h.upload(other.token, '/api/v1/local-to-live', zip, { name: 'theirs' })).json();
  await h.waitFor(other.token, own.operation.id);
  const before = await footprint(kernel());
  refused(
    await sendForm([['file', zip, 'a.zip']], `/api/v1/projects/${own.project.id}/local-to-live`),
    404,
    'not_found',
  );
  refused(
    await sendForm([['file', zip, 'a.zip']], `/api/v1/projects/${crypto.randomUUID()}/local-to-live`),
    404,
    'not_found',
  );
  await unchanged(before);
});

test('project level: name and visibility parts are refused, naming the part; nothing stored', async () => {
  const first = await (await h.upload(token, '/api/v1/local-to-live', zip, { name: 'project-level' })).json();
  await h.waitFor(token, first.operation.id);
  const path = `/api/v1/projects/${first.project.id}/local-to-live`;
  const before = await footprint(kernel());
  for (const part of ['name', 'visibility']) {
    const error = refused(
      await sendForm(
        [
          [part, 'public'],
          ['file', zip, 'a.zip'],
        ],
        path,
      ),
      400,
      'invalid_request',
    );
    assert.is(error.details.field, part);
    assert.match(error.message, `"${part}"`);
  }
  await unchanged(before);
  const res = await sendForm(
    [
      ['file', zip, 'a.zip'],
      ['skip_build', 'true'],
    ],
    path,
  );
  assert.is(res.status, 202, JSON.stringify(res));
  assert.is(res.body.project.id, first.project.id);
  await h.waitFor(token, res.body.operation.id);
});

test('an upload slower than requestTimeoutMs is cut off; nothing left behind', async () => {
  const slow = await liveHoist({ requestTimeoutMs: 1500 });
  try {
    const { token } = await slow.login();
    const before = await footprint(slow.running.kernel);
    const form = new Form();
    const conn = await rawRequest(slow.api, 'POST', '/api/v1/local-to-live', {
      authorization: `Bearer ${token}`,
      'content-type': form.contentType,
      'content-length': MiB,
    });
    const started = Date.now();
    await conn.write(Buffer.concat([form.part('name', 'slow'), form.head('file', 'a.zip')]));
    let settled = false;
    void conn.response.then(() => (settled = true));
    while (!settled && Date.now() - started < 20_000) {
      await conn.write(Buffer.alloc(64, 's'));
      await new Promise((r) => setTimeout(r, 100));
    }
    const res = await conn.response;
    const took = Date.now() - started;
    assert.ok(took >= 1400 && took < 5000, `cut off after ${took} ms`);
    assert.is(res.status, 408, JSON.stringify(res));
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(await footprint(slow.running.kernel), before);
    assert.is((await slow.get(token, '/api/v1/me')).status, 200);
  } finally {
    await slow.close();
  }
});

test.run();
