import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { join } from 'node:path';
import { brotliCompressSync, brotliDecompressSync, gunzipSync } from 'node:zlib';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { variantsDir } from '../../../core/ports/file-index.js';
import { serveStatic, type StaticRelease } from '../../../adapters/edge/static-files.js';
import { parseHeaders, parseRedirects } from '../../../core/ports/site-rules.cjs';
import { BlobStore } from '../../../plugins/shared/release/blob-store.js';
import {
  addReleaseVariants,
  readFileIndex,
  saveFileIndex,
  storeReleaseFiles,
  type ReleaseFileSource,
} from '../../../plugins/shared/release/release-files.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-static-files-'));
const store = new BlobStore(join(dir, 'blobs'));
const css = Buffer.from('body { color: #123456; }\n'.repeat(400));
const js = Buffer.from('export const answer = 42;\n'.repeat(600));
// Past the edge's in-memory file size (1 MB) once compressed: its variants are streamed out of the pack.
const big = Buffer.from(randomBytes(1536 * 1024).toString('hex'));
// Past what the edge reads at once (64 KB), its variants too: read through the pool, then held.
const mid = Buffer.from(randomBytes(100 * 1024).toString('hex'));
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

let server: http.Server;
let release: StaticRelease;
let old: StaticRelease;
let pending: StaticRelease | null = null;
let redirecting: StaticRelease | null = null;
/** Releases the test server answers from by their id (the X-Release header), beside those above. */
const releases = new Map<string, StaticRelease>();

/** A release stored as deployer-local stores it (files, index, one pack of variants), beside the store. */
async function stored(id: string, files: Record<string, Buffer>, precompress = true): Promise<string> {
  const root = join(dir, id);
  const source: ReleaseFileSource = async (fn) => {
    for (const [path, bytes] of Object.entries(files)) {
      const whole = bytes.length <= 1024 * 1024;
      await fn({
        path,
        size: bytes.length,
        executable: false,
        ...(whole ? { data: bytes } : { stream: Readable.from([bytes]) }),
      });
    }
  };
  await saveFileIndex(root, await storeReleaseFiles(store, root, source, { precompress }));
  return root;
}

test.before(async () => {
  const root = await stored('r1', { 'style.css': css, 'app.js': js, 'big.js': big, 'mid.js': mid });
  release = { deploymentId: 'r1', root, headers: {} };
  // A release stored before packs: a file and its brotli variant, each a blob, the variant linked under <id>.variants/.
  const oldRoot = join(dir, 'r0');
  mkdirSync(oldRoot);
  mkdirSync(variantsDir(oldRoot));
  await store.put(sha(css), join(oldRoot, 'style.css'), css);
  const br = brotliCompressSync(css);
  await store.put(`${sha(css)}.br`, join(variantsDir(oldRoot), `${sha(css)}.br`), br);
  const file = { size: css.length, type: 'text/css; charset=utf-8', etag: `"${sha(css)}"`, mtimeMs: Date.now() };
  await saveFileIndex(oldRoot, {
    files: { 'style.css': { ...file, br: { path: `r0.variants/${sha(css)}.br`, size: br.length } } },
  });
  old = { deploymentId: 'r0', root: oldRoot, headers: {} };
  server = http.createServer((req, res) => {
    const asked = req.headers['x-release'];
    const answering = serveStatic(
      req,
      res,
      releases.get(String(asked)) ??
        (asked === 'r0' ? old : asked === 'r2' ? pending! : asked === 'r3' ? redirecting! : release),
    );
    if (answering) answering.catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
test.after(async () => {
  await new Promise((resolve) => server?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** A request to the test server; the body as bytes. */
function get(path: string, headers: Record<string, string> = {}, method = 'GET') {
  const { port } = server.address() as AddressInfo;
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
    http
      .request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
        const chunks: Buffer[] = [];
        res
          .on('data', (c: Buffer) => chunks.push(c))
          .on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      })
      .on('error', reject)
      .end();
  });
}

test('br and gzip come out of the pack, decoding to the file, again (from memory the second time)', async () => {
  const index = (await readFileIndex(release.root))!;
  const offsets = ['style.css', 'app.js'].flatMap((p) => [index.files[p]!.br!.offset, index.files[p]!.gzip!.offset]);
  assert.is(new Set(offsets).size, 4, `the variants lie at different offsets: ${offsets.join()}`);
  for (const [path, bytes] of [
    ['/style.css', css],
    ['/app.js', js],
    ['/big.js', big],
    ['/mid.js', mid],
  ] as const)
    for (let i = 0; i < 2; i++) {
      const br = await get(path, { 'accept-encoding': 'br' });
      assert.is(br.status, 200);
      assert.is(br.headers['content-encoding'], 'br');
      assert.is(br.headers.vary, 'accept-encoding');
      assert.is(Number(br.headers['content-length']), br.body.length);
      assert.ok(brotliDecompressSync(br.body).equals(bytes), `${path} br, time ${i + 1}`);
      const gz = await get(path, { 'accept-encoding': 'gzip' });
      assert.is(gz.headers['content-encoding'], 'gzip');
      assert.is(Number(gz.headers['content-length']), gz.body.length);
      assert.ok(gunzipSync(gz.body).equals(bytes), `${path} gzip, time ${i + 1}`);
      assert.ok((await get(path)).body.equals(bytes), `${path} identity`);
    }
  const { files } = (await readFileIndex(release.root))!;
  assert.ok(files['big.js']!.br!.size > 1024 * 1024, 'big.js is streamed from the pack, not held');
  assert.ok(files['style.css']!.br!.size < 64 * 1024 && files['app.js']!.size < 64 * 1024, 'read at once');
  assert.ok(files['mid.js']!.gzip!.size > 64 * 1024, 'mid.js and its variants are read through the pool');
});

test('HEAD gets the variant headers and no body; a Range gets bytes of the file, not of a variant', async () => {
  const head = await get('/app.js', { 'accept-encoding': 'gzip' }, 'HEAD');
  assert.is(head.status, 200);
  assert.is(head.headers['content-encoding'], 'gzip');
  assert.is(Number(head.headers['content-length']), (await get('/app.js', { 'accept-encoding': 'gzip' })).body.length);
  assert.is(head.body.length, 0);
  const part = await get('/app.js', { range: 'bytes=26-51', 'accept-encoding': 'br, gzip' });
  assert.is(part.status, 206);
  assert.is(part.headers['content-encoding'], undefined);
  assert.is(part.headers['content-range'], `bytes 26-51/${js.length}`);
  assert.is(part.body.toString(), js.subarray(26, 52).toString());
});

test('a release whose variants are pending is served as it is, varying, until its index has them', async () => {
  const root = await stored('r2', { 'style.css': css, 'tiny.css': Buffer.from('a{}') }, false);
  const index = (await readFileIndex(root))!;
  await saveFileIndex(root, { ...index, variantsPending: Date.now() });
  pending = { deploymentId: 'r2', root, headers: {} };
  const asBr = () => get('/style.css', { 'accept-encoding': 'br', 'x-release': 'r2' });
  const first = await asBr();
  assert.is(first.headers['content-encoding'], undefined);
  assert.equal(first.body, css);
  assert.match(String(first.headers.vary), /accept-encoding/i, 'it will have a variant');
  const tiny = await get('/tiny.css', { 'accept-encoding': 'br', 'x-release': 'r2' });
  assert.is(tiny.headers.vary, undefined, 'under 1 KB: never a variant');
  await saveFileIndex(root, await addReleaseVariants(root, index, {}));
  let now = first;
  for (let i = 0; i < 200 && now.headers['content-encoding'] !== 'br'; i++) {
    await new Promise((r) => setTimeout(r, 10));
    now = await asBr();
  }
  assert.is(now.headers['content-encoding'], 'br', 'the index read again has the variants');
  assert.equal(brotliDecompressSync(now.body), css);
});

test('a release stored before packs is served its variants as whole files', async () => {
  const br = await get('/style.css', { 'accept-encoding': 'br', 'x-release': 'r0' });
  assert.is(br.headers['content-encoding'], 'br');
  assert.ok(brotliDecompressSync(br.body).equals(css));
  const again = await get('/style.css', { 'accept-encoding': 'br', 'x-release': 'r0' });
  assert.ok(again.body.equals(br.body));
  const plain = await get('/style.css', { 'accept-encoding': 'gzip', 'x-release': 'r0' });
  assert.is(plain.headers['content-encoding'], undefined, 'it had no gzip variant');
  assert.ok(plain.body.equals(css));
});

test('_redirects and _headers: redirects, rewrites, forced rules, 404 and 410 pages, headers', async () => {
  const page = (name: string) => Buffer.from(`<h1>${name}</h1>`);
  const text = [
    '# rules are tried in order',
    '/old/:id  /new/:id',
    '/blog/*  https://blog.example/:splat  302',
    '/search  /find?q=all  307',
    '/go/*  /:splat  302',
    '/about  /index.html  200!',
    '/removed  /gone.html  410',
    '/missing/*  /nothing.html  404',
    '/ghost  /nothing.html  200',
    '/climb/*  /:splat  200',
    '/*  /index.html  200',
  ].join('\n');
  const root = await stored('r3', {
    'index.html': page('home'),
    'about.html': page('about'),
    'docs/index.html': page('docs'),
    'gone.html': page('gone'),
    '404.html': page('not found'),
    _redirects: Buffer.from(text),
  });
  const { rules, errors } = parseRedirects(text);
  assert.equal(errors, []);
  const site = parseHeaders('/*\n  X-Frame-Options: DENY\n  X-Robots-Tag: all\n/docs/*\n  Cache-Control: no-cache\n');
  assert.equal(site.errors, []);
  await saveFileIndex(root, { ...(await readFileIndex(root))!, redirects: rules, headers: site.rules });
  redirecting = { deploymentId: 'r3', root, headers: { 'x-hoist-release': 'r3', 'x-robots-tag': 'noindex' } };
  const at = (path: string) => get(path, { 'x-release': 'r3' });

  const moved = await at('/old/42?x=1');
  assert.is(moved.status, 301);
  assert.is(moved.headers.location, '/new/42?x=1', 'placeholder filled, the query kept');
  assert.is(moved.headers['x-hoist-release'], 'r3');
  assert.is((await at('/old/42/')).headers.location, '/new/42', 'a trailing slash does not matter');
  const blog = await at('/blog/2024/hello?ref=x');
  assert.is(blog.status, 302);
  assert.is(blog.headers.location, 'https://blog.example/2024/hello?ref=x');
  assert.is((await at('/search?q=mine')).headers.location, '/find?q=all', "a target's own query wins");
  assert.is((await at('/go//evil.example/x')).headers.location, '/evil.example/x', 'never to a host the request names');

  const spa = await at('/app/deep/link');
  assert.is(spa.status, 200, 'the single-page fallback');
  assert.equal(spa.body, page('home'));
  assert.is(spa.headers['content-type'], 'text/html; charset=utf-8');
  assert.ok(spa.headers.etag, 'the rewritten file keeps its validators');
  const again = await get('/app/deep/link', { 'x-release': 'r3', 'if-none-match': String(spa.headers.etag) });
  assert.is(again.status, 304);

  assert.equal((await at('/docs/')).body, page('docs'), 'a file answers first: the fallback does not apply');
  const folder = await at('/docs');
  assert.is(folder.status, 301, 'a folder without its slash still redirects to it');
  assert.is(folder.headers.location, '/docs/');
  assert.equal((await at('/about')).body, page('home'), 'a forced rule wins over the file about.html');

  const gone = await at('/removed');
  assert.is(gone.status, 410);
  assert.equal(gone.body, page('gone'));
  assert.is(gone.headers['cache-control'], 'no-store');
  const missing = await at('/missing/x');
  assert.is(missing.status, 404);
  assert.equal(missing.body, page('not found'), "the site's 404.html: the rule's page does not exist");
  const ghost = await at('/ghost');
  assert.is(ghost.status, 404, 'a rewrite to a file the release lacks is a 404');
  assert.equal(ghost.body, page('not found'));

  for (const file of ['/_redirects', '/_headers'])
    assert.equal((await at(file)).body, page('home'), `${file} is not served: the fallback answers`);

  // _headers: on files, rewrites and 304s; the release's own headers win (a draft stays noindex).
  const docs = await at('/docs/');
  assert.is(docs.headers['cache-control'], 'no-cache');
  assert.is(docs.headers['x-frame-options'], 'DENY');
  assert.is(docs.headers['x-robots-tag'], 'noindex');
  assert.is(docs.headers['x-hoist-release'], 'r3');
  const same = await get('/docs/', { 'x-release': 'r3', 'if-none-match': String(docs.headers.etag) });
  assert.is(same.status, 304);
  assert.is(same.headers['cache-control'], 'no-cache');
  assert.is(spa.headers['x-frame-options'], 'DENY', 'a rewrite gets the headers of the path asked');
  assert.is(spa.headers['cache-control'], 'public, max-age=0, must-revalidate', 'the default elsewhere');
  const range = await get('/docs/', { 'x-release': 'r3', range: 'bytes=0-3' });
  assert.is(range.status, 206);
  assert.is(range.headers['cache-control'], 'no-cache');
  const climb = await at('/climb/..%2f..%2fr1.index.json');
  assert.is(climb.status, 404, 'a rewrite never leaves the release');
  assert.equal(climb.body, page('not found'));
});

/**
 * A release `id` of `files` with the rules of its `_redirects` and `_headers` texts in its index (as a deploy writes
 * them), answered as a draft's (noindex) unless `public`.
 */
async function withRules(
  id: string,
  files: Record<string, Buffer>,
  redirects: string,
  headers?: string,
  isPublic = false,
) {
  const root = await stored(id, files);
  const site = { redirects: parseRedirects(redirects), headers: headers === undefined ? null : parseHeaders(headers) };
  assert.equal([...site.redirects.errors, ...(site.headers?.errors ?? [])], []);
  const index = (await readFileIndex(root))!;
  await saveFileIndex(root, {
    ...index,
    redirects: site.redirects.rules,
    ...(site.headers && { headers: site.headers.rules }),
  });
  const own = isPublic ? { 'x-hoist-release': id } : { 'x-hoist-release': id, 'x-robots-tag': 'noindex' };
  releases.set(id, { deploymentId: id, root, headers: own });
}

/** The headers of an answer but those node:http adds to any (Date, Connection, Keep-Alive). */
function answerHeaders({ headers }: { headers: http.IncomingHttpHeaders }) {
  const { date: _date, connection: _connection, 'keep-alive': _keepAlive, ...rest } = headers;
  return rest;
}

const SITE = {
  'index.html': Buffer.from('<h1>home</h1>'),
  'docs/index.html': Buffer.from('<h1>docs</h1>'),
  'gone.html': Buffer.from('<h1>gone</h1>'),
  '404.html': Buffer.from('<h1>not found</h1>'),
};
const SITE_REDIRECTS = '/old/*  /new/:splat  301\n/shop  /store  302\n/removed  /gone.html  410\n';
const SITE_HEADERS =
  '/*\n  X-Frame-Options: DENY\n  X-Robots-Tag: all\n/old/*\n  X-Old: moved\n/docs\n  X-Docs: yes\n' +
  '/missing/*\n  Cache-Control: public, max-age=60\n  Content-Type: text/plain\n/404.html\n  X-Page: not-found\n';

test("_headers on redirects, the folder redirect, 404s, 410s: the path asked's rules, the release's win", async () => {
  await withRules('r4', SITE, SITE_REDIRECTS, SITE_HEADERS);
  const at = (path: string, method = 'GET') => get(path, { 'x-release': 'r4' }, method);

  const moved = await at('/old/a?x=1');
  assert.is(moved.status, 301);
  assert.is(moved.headers.location, '/new/a?x=1');
  assert.is(moved.headers['content-length'], '0');
  assert.is(moved.headers['x-frame-options'], 'DENY', 'the /* rule');
  assert.is(moved.headers['x-old'], 'moved', "the rule of the path's own");
  assert.is(moved.headers['x-robots-tag'], 'noindex', "a draft's noindex wins over the site's");
  assert.is(moved.headers['x-hoist-release'], 'r4');
  const shop = await at('/shop');
  assert.is(shop.status, 302);
  assert.is(shop.headers['x-frame-options'], 'DENY');
  assert.is(shop.headers['x-old'], undefined, 'only the rules that match the path asked');

  const folder = await at('/docs?v=2');
  assert.is(folder.status, 301);
  assert.is(folder.headers.location, '/docs/?v=2');
  assert.is(folder.headers['x-frame-options'], 'DENY');
  assert.is(folder.headers['x-docs'], 'yes');
  assert.is(folder.headers['x-robots-tag'], 'noindex');

  const missing = await at('/nope');
  assert.is(missing.status, 404);
  assert.equal(missing.body, SITE['404.html']);
  assert.is(missing.headers['x-frame-options'], 'DENY');
  assert.is(missing.headers['x-page'], undefined, "the path asked's rules, not those of /404.html");
  assert.is(missing.headers['x-robots-tag'], 'noindex', "a draft's noindex wins over the site's");
  assert.is(missing.headers['cache-control'], 'no-store', 'the default where no rule sets it');
  assert.is((await at('/404.html')).headers['x-page'], 'not-found', 'the /404.html rule is on the file itself');
  const ruled = await at('/missing/x');
  assert.is(ruled.status, 404);
  assert.is(ruled.headers['cache-control'], 'public, max-age=60', "over the edge's own, as on files");
  assert.is(ruled.headers['content-type'], 'text/plain');
  assert.is(ruled.headers['content-length'], String(SITE['404.html'].length));
  const head = await at('/nope', 'HEAD');
  assert.is(head.status, 404);
  assert.is(head.headers['x-frame-options'], 'DENY');
  assert.is(head.body.length, 0);

  const gone = await at('/removed');
  assert.is(gone.status, 410);
  assert.equal(gone.body, SITE['gone.html']);
  assert.is(gone.headers['x-frame-options'], 'DENY');
  const dotfile = await at('/.env');
  assert.is(dotfile.status, 404);
  assert.is(dotfile.headers['x-frame-options'], 'DENY', 'a dotfile is a 404 of the site as well');
  const bad = await at('/%E0%A4%A');
  assert.is(bad.status, 400);
  assert.is(bad.headers['x-frame-options'], undefined, 'a 400 is no answer about the site: no custom headers');
  assert.is(bad.headers['x-hoist-release'], 'r4');
});

test("_headers on a public release's redirects and 404s: its X-Robots-Tag too", async () => {
  await withRules('r5', SITE, SITE_REDIRECTS, SITE_HEADERS, true);
  for (const path of ['/old/a', '/docs', '/nope']) {
    const res = await get(path, { 'x-release': 'r5' });
    assert.is(res.headers['x-robots-tag'], 'all', path);
    assert.is(res.headers['x-frame-options'], 'DENY', path);
  }
});

test('a site without _headers answers its redirects and 404s with the headers it had before', async () => {
  await withRules('r6', SITE, SITE_REDIRECTS);
  const at = (path: string) => get(path, { 'x-release': 'r6' });
  const draft = { 'x-hoist-release': 'r6', 'x-robots-tag': 'noindex' };
  assert.equal(answerHeaders(await at('/old/a?x=1')), { ...draft, location: '/new/a?x=1', 'content-length': '0' });
  assert.equal(answerHeaders(await at('/docs')), { ...draft, location: '/docs/', 'transfer-encoding': 'chunked' });
  const notFound = {
    ...draft,
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-length': String(SITE['404.html'].length),
  };
  assert.equal(answerHeaders(await at('/nope')), notFound);
  assert.equal(answerHeaders(await at('/.env')), notFound);
  const gone = await at('/removed');
  assert.equal(answerHeaders(gone), { ...notFound, 'content-length': String(SITE['gone.html'].length) });
});

test('a 404 or 410 page past 1 MiB is streamed, never read whole for an answer (a 3 GiB 404.html too)', async () => {
  await withRules('r7', { 'index.html': SITE['index.html'], 'big.html': big }, '/removed  /big.html  410\n');
  // A sparse file: 3 GiB that take no disk, past what one read may return (readFile refuses it).
  const page = join(releases.get('r7')!.root, '404.html');
  writeFileSync(page, '');
  truncateSync(page, 3 * 1024 ** 3);
  const at = (path: string, method = 'GET') => get(path, { 'x-release': 'r7' }, method);

  const gone = await at('/removed');
  assert.is(gone.status, 410);
  assert.is(gone.headers['content-length'], String(big.length));
  assert.equal(gone.body, big, 'the whole page, streamed');
  const head = await at('/nope', 'HEAD');
  assert.is(head.status, 404);
  assert.is(head.headers['content-length'], String(3 * 1024 ** 3), "the site's own page, however large");
  assert.is(head.headers['content-type'], 'text/html; charset=utf-8');
  const { port } = server.address() as AddressInfo;
  const first = await new Promise<{ status: number; length: string | undefined; bytes: number }>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/nope', headers: { 'x-release': 'r7' } }, (res) => {
        res.once('data', (c: Buffer) => {
          resolve({ status: res.statusCode!, length: res.headers['content-length'], bytes: c.length });
          res.destroy();
        });
      })
      .on('error', reject);
  });
  assert.equal(first, { status: 404, length: String(3 * 1024 ** 3), bytes: first.bytes });
  assert.ok(first.bytes > 0, 'its first bytes come before the rest is read');
});

test.run();
