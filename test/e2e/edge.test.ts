// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
let host: string;
let projectId: string;
let release: string;

/** A request to the edge over node:http (so paths go out exactly as written); the body as bytes. */
function edge(method: string, hostHeader: string, path: string, headers: Record<string, string> = {}) {
  const url = new URL(h.edge);
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
    const req = http.request(
      { method, host: url.hostname, port: url.port, path, headers: { host: hostHeader, ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res
          .on('data', (c) => chunks.push(c))
          .on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      },
    );
    req.on('error', reject).end();
  });
}
const get = (path: string, headers?: Record<string, string>) => edge('GET', host, path, headers);

const css = `body { color: #123456; }\n`.repeat(200);
const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
const woff2 = Buffer.from('774f4632000100000000', 'hex');
const wasm = Buffer.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
const longName = `assets/${'chunk-'.repeat(30)}abcdef.js`;
// Past the edge's in-memory file size (1 MB) and under it: read once and kept, or streamed.
const medium = randomBytes(300 * 1024);
const large = randomBytes(1536 * 1024);
const site = {
  'index.html': '<h1>home</h1>',
  'about/index.html': '<h1>about</h1>',
  'contact.html': '<h1>contact</h1>',
  '404.html': '<h1>custom missing page</h1>',
  'style.css': css,
  'app.js': 'console.log("hi")',
  'data.json': '{"a":1}',
  'logo.svg': '<svg xmlns="http://www.w3.org/2000/svg"></svg>',
  'img.png': png,
  'font.woff2': woff2,
  'mod.wasm': wasm,
  'letters.txt': 'abcdefghijklmnopqrstuvwxyz',
  '.env': 'SECRET=do-not-serve',
  '.well-known/security.txt': 'Contact: mailto:security@example.com',
  'assets/.hidden.txt': 'hidden',
  [longName]: 'long',
  'a b.txt': 'space',
  'caf\u00e9/index.html': 'unicode',
  '100%.txt': 'percent',
  'x#y.txt': 'hash',
  'medium.bin': medium,
  'large.bin': large,
};

test.before(async () => {
  h = await liveHoist();
  ({ token } = await h.login('free'));
  const body = await (await h.upload(token, '/api/v1/local-to-live', await zipOf(site), { name: 'Edge Site' })).json();
  const op = await h.waitFor(token, body.operation.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  host = hostOf(body.project.url);
  projectId = body.project.id;
  release = (await get('/')).headers['x-hoist-release'] as string;
  // The precompressed variants follow the switch (deployer-local makes them after it): served within moments.
  for (let i = 0; i < 500; i++) {
    if ((await get('/style.css', { 'accept-encoding': 'br' })).headers['content-encoding'] === 'br') break;
    await new Promise((r) => setTimeout(r, 10));
  }
});
test.after(async () => h?.close());

test('each project is served on <slug>.<appsDomain>, the apps domain localhost by default', async () => {
  assert.match(host, /^edge-site\.localhost:\d+$/);
  const home = await get('/');
  assert.is(home.status, 200);
  assert.is(home.body.toString(), '<h1>home</h1>');
  assert.match(String(home.headers['content-type']), /^text\/html; charset=utf-8/);
  assert.match(release, /^[0-9a-f-]{36}$/);
  // Host names are case-insensitive and may end with a dot; the port does not matter.
  assert.is((await edge('GET', 'EDGE-SITE.LocalHost.', '/')).body.toString(), '<h1>home</h1>');
  assert.is((await edge('GET', 'edge-site.localhost:1234', '/')).body.toString(), '<h1>home</h1>');
});

test('folders serve index.html; /about redirects to /about/; /contact serves contact.html', async () => {
  assert.is((await get('/about/')).body.toString(), '<h1>about</h1>');
  const redirect = await get('/about?x=1');
  assert.is(redirect.status, 301);
  assert.is(redirect.headers.location, '/about/?x=1');
  // A doubled slash must not turn into a protocol-relative redirect to another host.
  const sneaky = await get('//about');
  assert.is(sneaky.status, 301);
  assert.is(sneaky.headers.location, '/about/');
  assert.is((await get('/contact')).body.toString(), '<h1>contact</h1>');
  assert.is((await get('/contact.html')).body.toString(), '<h1>contact</h1>');
  assert.is((await get('/index.html?utm=1')).body.toString(), '<h1>home</h1>');
  assert.is((await get(`/${longName}`)).body.toString(), 'long');
  assert.is((await get('/a%20b.txt')).body.toString(), 'space');
  assert.is((await get('/caf%C3%A9/')).body.toString(), 'unicode');
  assert.is((await get('/caf%C3%A9')).headers.location, '/caf%C3%A9/');
  assert.is((await get('/100%25.txt')).body.toString(), 'percent');
  assert.is((await get('/x%23y.txt')).body.toString(), 'hash');
});

test("a missing file gets the site's 404.html with status 404, for GET and HEAD", async () => {
  for (const path of ['/nope', '/nope.css', '/about/nope/', '/contact/']) {
    const res = await get(path);
    assert.is(res.status, 404, path);
    assert.is(res.body.toString(), '<h1>custom missing page</h1>', path);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    assert.is(res.headers['cache-control'], 'no-store');
    assert.is(res.headers.etag, undefined);
  }
  // Conditional and range headers do not turn the 404 page into a 304 or 206.
  assert.is((await get('/nope', { 'if-none-match': '*', range: 'bytes=0-3' })).status, 404);
  const head = await edge('HEAD', host, '/nope');
  assert.is(head.status, 404);
  assert.is(head.body.length, 0);
});

test(
  'ETag and Last-Modified answer conditional requests with 304; Cache-Control makes ' + 'browsers revalidate',
  async () => {
    const first = await get('/app.js');
    const { etag } = first.headers;
    const lastModified = first.headers['last-modified']!;
    // A strong ETag from the content where the release has a file index (the local deployer: the same
    // bytes match in any release); else one naming the release (the Docker deployer's server).
    if (etag?.startsWith('W/')) assert.ok(etag.includes(release), `the ETag names the release: ${etag}`);
    else assert.is(etag, `"${createHash('sha256').update(site['app.js']).digest('hex')}"`);
    assert.ok(lastModified);
    assert.is(first.headers['cache-control'], 'public, max-age=0, must-revalidate');

    const same = await get('/app.js', { 'if-none-match': etag! });
    assert.is(same.status, 304);
    assert.is(same.body.length, 0);
    assert.is(same.headers.etag, etag);
    assert.is((await get('/app.js', { 'if-none-match': `"other", ${etag!.replace(/^W\//, '')}` })).status, 304);
    assert.is((await get('/app.js', { 'if-none-match': '*' })).status, 304);
    assert.is((await get('/app.js', { 'if-none-match': 'W/"other"' })).status, 200);
    // If-None-Match wins over If-Modified-Since.
    assert.is((await get('/app.js', { 'if-none-match': 'W/"other"', 'if-modified-since': lastModified })).status, 200);

    assert.is((await get('/app.js', { 'if-modified-since': lastModified })).status, 304);
    assert.is(
      (await get('/app.js', { 'if-modified-since': new Date(Date.parse(lastModified) + 60_000).toUTCString() })).status,
      304,
    );
    const stale = await get('/app.js', {
      'if-modified-since': new Date(Date.parse(lastModified) - 60_000).toUTCString(),
    });
    assert.is(stale.status, 200);
    assert.is(stale.body.toString(), site['app.js']);

    const folder = await get('/about/');
    assert.is((await get('/about/', { 'if-none-match': folder.headers.etag! })).status, 304);
  },
);

test('gzip and brotli when accepted, decoding to the file; small files and identity stay plain', async () => {
  const br = await get('/style.css', { 'accept-encoding': 'br' });
  assert.is(br.headers['content-encoding'], 'br');
  assert.match(String(br.headers.vary), /accept-encoding/i);
  assert.is(brotliDecompressSync(br.body).toString(), css);
  const gz = await get('/style.css', { 'accept-encoding': 'gzip' });
  assert.is(gz.headers['content-encoding'], 'gzip');
  assert.is(gunzipSync(gz.body).toString(), css);
  assert.ok(gz.body.length < css.length);
  const plain = await get('/style.css', { 'accept-encoding': 'identity' });
  assert.is(plain.headers['content-encoding'], undefined);
  assert.is(plain.body.toString(), css);
  assert.is((await get('/style.css')).body.toString(), css);
  // Already-compressed formats are not compressed again.
  assert.is((await get('/img.png', { 'accept-encoding': 'gzip' })).headers['content-encoding'], undefined);
});

test('files of any size are whole, from memory (up to 1 MB) or from the disk, again and again', async () => {
  for (const [path, bytes] of [
    ['/medium.bin', medium],
    ['/large.bin', large],
  ] as const) {
    for (let i = 0; i < 3; i++) {
      const res = await get(path, { 'accept-encoding': 'gzip, br' });
      assert.is(res.status, 200, path);
      assert.is(res.headers['content-length'], String(bytes.length), path);
      assert.ok(res.body.equals(bytes), `${path}, time ${i + 1}`);
    }
    const part = await get(path, { range: 'bytes=1000-1999' });
    assert.is(part.status, 206);
    assert.ok(part.body.equals(bytes.subarray(1000, 2000)));
  }
});

test('range requests: 206 with Content-Range, 416 when unsatisfiable, never compressed', async () => {
  const part = await get('/letters.txt', { range: 'bytes=2-5' });
  assert.is(part.status, 206);
  assert.is(part.headers['content-range'], 'bytes 2-5/26');
  assert.is(part.body.toString(), 'cdef');
  const tail = await get('/letters.txt', { range: 'bytes=-3' });
  assert.is(tail.body.toString(), 'xyz');
  const zipped = await get('/style.css', { range: 'bytes=0-99', 'accept-encoding': 'gzip, br' });
  assert.is(zipped.status, 206);
  assert.is(zipped.headers['content-encoding'], undefined);
  assert.is(zipped.body.toString(), css.slice(0, 100));
  const bad = await get('/letters.txt', { range: 'bytes=100-200' });
  assert.is(bad.status, 416);
  assert.is(bad.headers['content-range'], 'bytes */26');
  // An If-Range naming another release's ETag gets the whole (current) file.
  const other = await get('/letters.txt', {
    range: 'bytes=2-5',
    'if-range': '"00000000-0000-0000-0000-000000000000-1a"',
  });
  assert.is(other.status, 200);
  assert.is(other.body.toString(), site['letters.txt']);
});

test('content types', async () => {
  const types: Record<string, RegExp> = {
    '/': /^text\/html; charset=utf-8$/,
    '/style.css': /^text\/css; charset=utf-8$/,
    '/app.js': /^(application|text)\/javascript(; charset=utf-8)?$/,
    '/data.json': /^application\/json(; charset=utf-8)?$/,
    '/logo.svg': /^image\/svg\+xml/,
    '/img.png': /^image\/png$/,
    '/font.woff2': /^font\/woff2$/,
    '/mod.wasm': /^application\/wasm$/,
  };
  for (const [path, type] of Object.entries(types))
    assert.match(String((await get(path)).headers['content-type']), type, path);
  assert.equal((await get('/img.png')).body, png);
  assert.equal((await get('/mod.wasm')).body, wasm);
});

test('HEAD answers the headers of GET without a body', async () => {
  const head = await edge('HEAD', host, '/app.js');
  assert.is(head.status, 200);
  assert.is(head.body.length, 0);
  assert.is(head.headers['content-length'], String(site['app.js'].length));
  assert.match(String(head.headers['content-type']), /javascript/);
  assert.is(head.headers.etag, (await get('/app.js')).headers.etag);
  const zipped = await edge('HEAD', host, '/style.css', { 'accept-encoding': 'gzip' });
  assert.is(zipped.status, 200);
  assert.is(zipped.body.length, 0);
  assert.is((await edge('HEAD', host, '/app.js', { 'if-none-match': head.headers.etag! })).status, 304);
});

test('other methods get 405 with Allow', async () => {
  for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS']) {
    const res = await edge(method, host, '/');
    assert.is(res.status, 405, method);
    assert.is(res.headers.allow, 'GET, HEAD');
  }
});

test('dotfiles are not served, except under /.well-known/', async () => {
  for (const path of ['/.env', '/%2eenv', '/assets/.hidden.txt', '/.well-known/../.env']) {
    const res = await get(path);
    assert.is(res.status, 404, path);
    assert.not.ok(res.body.toString().includes('SECRET') || res.body.toString().includes('hidden'), path);
  }
  const wellKnown = await get('/.well-known/security.txt');
  assert.is(wellKnown.status, 200);
  assert.is(wellKnown.body.toString(), site['.well-known/security.txt']);
});

test('path traversal never leaves the release directory', async () => {
  const dataDir = h.running.kernel.config.dataDir;
  writeFileSync(join(dataDir, 'secret.txt'), 'TOPSECRET');
  // The releases folder is deployer-local's; with another deployer it is made here, as bait all the same.
  mkdirSync(join(dataDir, 'releases'), { recursive: true });
  writeFileSync(join(dataDir, 'releases', 'secret.txt'), 'TOPSECRET');
  const attempts = [
    '/../secret.txt',
    '/../../secret.txt',
    '/..%2fsecret.txt',
    '/..%2f..%2fsecret.txt',
    '/%2e%2e/secret.txt',
    '/%2e%2e/%2e%2e/secret.txt',
    '/%2e%2e%2f%2e%2e%2fsecret.txt',
    '/about/../../secret.txt',
    '/about/%2e%2e/%2e%2e/secret.txt',
    '/..\\secret.txt',
    '/%5c..%5csecret.txt',
    '/%252e%252e/secret.txt',
    '/index.html%00',
    '/%00',
    '/..%00/secret.txt',
    '/%c0%ae%c0%ae/secret.txt',
    '/%e0%80%ae%e0%80%ae/secret.txt',
    `/../${release}/index.html`,
    '/../../../../../../../../etc/passwd',
    '/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd',
  ];
  for (const path of attempts) {
    const res = await get(path);
    const body = res.body.toString();
    assert.ok([400, 404].includes(res.status) || body === '<h1>home</h1>', `${path}: ${res.status}`);
    assert.not.ok(body.includes('TOPSECRET') || body.includes('root:'), path);
  }
});

test('draft projects carry X-Robots-Tag: noindex; public ones do not', async () => {
  assert.is((await get('/')).headers['x-robots-tag'], 'noindex');
  assert.is((await get('/nope')).headers['x-robots-tag'], 'noindex');
  const res = await fetch(`${h.api}/api/v1/projects/${projectId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ visibility: 'public' }),
  });
  assert.is(res.status, 200, await res.text());
  const page = await get('/');
  assert.is(page.status, 200);
  assert.is(page.headers['x-robots-tag'], undefined);
});

test('an unknown host and a project with nothing live get the 404 page', async () => {
  for (const name of [
    'nobody-here.localhost',
    'localhost',
    'example.com',
    'edge-site.example.com',
    '-bad-.localhost',
    'a.b.localhost',
  ]) {
    const res = await edge('GET', name, '/');
    assert.is(res.status, 404, name);
    assert.match(res.body.toString(), /Not found/, name);
    assert.is(res.headers['x-hoist-release'], undefined, name);
  }
  const created = await fetch(`${h.api}/api/v1/projects`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Nothing Yet' }),
  });
  const project = await created.json();
  assert.is(created.status, 201, JSON.stringify(project));
  const res = await edge('GET', hostOf(project.url), '/');
  assert.is(res.status, 404);
  assert.match(res.body.toString(), /Not found/);
});

test('ETags differ between releases even for a file of the same size', async () => {
  const first = await (
    await h.upload(token, '/api/v1/local-to-live', await zipOf({ 'index.html': 'AAAA', 'same.txt': 'one' }), {
      name: 'etags',
    })
  ).json();
  assert.is((await h.waitFor(token, first.operation.id)).status, 'succeeded');
  const etagHost = hostOf(first.project.url);
  const before = await edge('GET', etagHost, '/same.txt');
  assert.is(before.body.toString(), 'one');

  const second = await (
    await h.upload(
      token,
      `/api/v1/projects/${first.project.id}/local-to-live`,
      await zipOf({ 'index.html': 'BBBB', 'same.txt': 'two' }),
    )
  ).json();
  assert.is((await h.waitFor(token, second.operation.id)).status, 'succeeded');
  const after = await edge('GET', etagHost, '/same.txt');
  assert.is(after.body.toString(), 'two');
  assert.is(after.headers['content-length'], before.headers['content-length']);
  assert.is.not(after.headers.etag, before.headers.etag);
  // A browser holding the old file revalidates and gets the new one.
  const revalidated = await edge('GET', etagHost, '/same.txt', { 'if-none-match': before.headers.etag! });
  assert.is(revalidated.status, 200);
  assert.is(revalidated.body.toString(), 'two');
  assert.is(
    (await edge('GET', etagHost, '/', { 'if-none-match': (await edge('GET', etagHost, '/')).headers.etag! })).status,
    304,
  );
});

test.run();
