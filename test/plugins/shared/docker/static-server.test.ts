import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  parseHeaders,
  parseRedirects,
  type HeaderRule,
  type RedirectRule,
} from '../../../../core/ports/site-rules.cjs';
import { stageRuntime } from '../../../../plugins/shared/docker/release-image.js';

// The release's root sits one level down, beside a file no request may reach.
const top = mkdtempSync(join(tmpdir(), 'hoist-static-server-'));
const root = join(top, 'site');
// The server as a release gets it (/hoist): beside the rules' matcher it requires, which the repository keeps in core.
await stageRuntime(join(top, 'hoist'), root, { runtime: 'node' });
const { createStaticServer } = createRequire(import.meta.url)(join(top, 'hoist', 'static-server.cjs')) as {
  createStaticServer(
    root: string,
    release: string,
    rules?: { redirects?: RedirectRule[]; headers?: HeaderRule[] },
  ): Server;
};
const FILES: Record<string, string> = {
  'index.html': 'home page',
  'about.html': 'about page',
  'docs/index.html': 'docs page',
  '404.html': 'site missing page',
  'gone.html': 'gone page',
  'blog.html': 'blog page',
  'blog/post.html': 'a post',
  'assets/app.js': 'console.log(1);',
};
const REDIRECTS = [
  '# a comment',
  '/about /index.html 200!',
  '/old/:id /new/:id 301',
  '/search /find?q=hoist 302',
  '/removed /gone.html 410',
  '/gone /gone.html 410',
  '/missing-404 /nowhere.html 404',
  '/broken /nowhere.html 200',
  '/secret /_redirects 200',
  '/x/* /:splat 200',
  '/y/* /:splat 301',
  '/* /index.html 200',
].join('\n');
for (const [name, body] of Object.entries({ ...FILES, _redirects: REDIRECTS, _headers: '/*\n  X-A: b\n' })) {
  mkdirSync(join(root, name, '..'), { recursive: true });
  writeFileSync(join(root, name), body);
}
writeFileSync(join(top, 'outside.html'), 'OUTSIDE THE ROOT');

const { rules, errors } = parseRedirects(REDIRECTS);
assert.equal(errors, []);
assert.is(rules.length, 11);

const servers: Server[] = [];
/** A server of the site with `siteRules` (none: as a site without _redirects and _headers is started); its URL. */
async function serve(siteRules?: { redirects?: RedirectRule[]; headers?: HeaderRule[] }): Promise<string> {
  const server = siteRules ? createStaticServer(root, 'rel1', siteRules) : createStaticServer(root, 'rel1');
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let base: string;
let plain: string;
test.before(async () => {
  base = await serve({ redirects: rules });
  plain = await serve();
});
test.after(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  rmSync(top, { recursive: true, force: true });
});

const get = async (url: string) => {
  const res = await fetch(url, { redirect: 'manual' });
  return { status: res.status, location: res.headers.get('location'), body: await res.text() };
};

/** A request sent as is (fetch would normalize the path): status and body. */
const raw = (url: string, path: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(`${url}/`, { path }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject).end();
  });

test('an SPA fallback (/* /index.html 200) answers a deep link with index.html and 200, the address kept', async () => {
  const res = await get(`${base}/app/deep/link`);
  assert.equal(res, { status: 200, location: null, body: 'home page' });
  // Without the rules the same path is missing.
  assert.is((await get(`${plain}/app/deep/link`)).status, 404);
});

test('a file that answers the path is served as itself: the fallback is not forced', async () => {
  assert.equal(await get(`${base}/docs/`), { status: 200, location: null, body: 'docs page' });
  assert.equal(await get(`${base}/blog`), { status: 200, location: null, body: 'blog page' });
  assert.equal(await get(`${base}/assets/app.js`), { status: 200, location: null, body: 'console.log(1);' });
  assert.equal(await get(`${base}/`), { status: 200, location: null, body: 'home page' });
});

test('a folder asked without its slash still redirects to it when no forced rule matches', async () => {
  const res = await get(`${base}/docs?v=2`);
  assert.is(res.status, 301);
  assert.is(res.location, '/docs/?v=2');
});

test('a folder without index.html is no file (as at the edge): the fallback answers, or its .html', async () => {
  // assets/ holds no index.html: not redirected to /assets/, the fallback applies.
  assert.equal(await get(`${base}/assets`), { status: 200, location: null, body: 'home page' });
  // blog/ holds no index.html and blog.html exists: /blog is blog.html, with or without rules.
  assert.equal(await get(`${plain}/blog`), { status: 200, location: null, body: 'blog page' });
  assert.equal(await get(`${plain}/assets`), { status: 404, location: null, body: 'site missing page' });
});

test('a forced rule (/about /index.html 200!) wins over the file', async () => {
  assert.equal(await get(`${base}/about`), { status: 200, location: null, body: 'home page' });
  assert.equal(await get(`${plain}/about`), { status: 200, location: null, body: 'about page' });
});

test('a placeholder fills the target; the request query is kept', async () => {
  const res = await get(`${base}/old/42?x=1`);
  assert.is(res.status, 301);
  assert.is(res.location, '/new/42?x=1');
  assert.is((await get(`${base}/old/42`)).location, '/new/42');
});

test("a target with its own query keeps it and drops the request's", async () => {
  const res = await get(`${base}/search?q=other`);
  assert.is(res.status, 302);
  assert.is(res.location, '/find?q=hoist');
});

test('a 410 rule answers 410 with the file it names, where no file answers the path', async () => {
  const res = await fetch(`${base}/removed`);
  assert.is(res.status, 410);
  assert.is(await res.text(), 'gone page');
  assert.match(String(res.headers.get('content-type')), /^text\/html/);
  // /gone is gone.html itself: the rule is not forced, the file answers.
  assert.equal(await get(`${base}/gone`), { status: 200, location: null, body: 'gone page' });
});

test("a 404 rule to a missing file answers 404 with the site's 404.html, as the edge does", async () => {
  const res = await get(`${base}/missing-404`);
  assert.is(res.status, 404);
  assert.is(res.body, 'site missing page');
});

test("a rewrite to a missing file answers 404 with the site's 404.html", async () => {
  assert.equal(await get(`${base}/broken`), { status: 404, location: null, body: 'site missing page' });
});

test('the _redirects file itself is never served, asked or rewritten to', async () => {
  for (const path of ['/_redirects', '/%5Fredirects', '//_redirects', '/docs/../_redirects']) {
    const res = await raw(plain, path);
    assert.is(res.status, 404, path);
    assert.not.match(res.body, '/old/:id', path);
  }
  // With rules, /_redirects is no file: the fallback answers, never the rules.
  assert.equal(await get(`${base}/_redirects`), { status: 200, location: null, body: 'home page' });
  const rewritten = await get(`${base}/secret`);
  assert.is(rewritten.status, 404);
  assert.not.match(rewritten.body, '/old/:id');
});

test('a splat that climbs never serves anything outside the root', async () => {
  for (const path of [
    '/x/..%2f..%2foutside.html',
    '/x/..%2f..%2f..%2f..%2f..%2fetc/passwd',
    '/x/%2e%2e/%2e%2e/outside.html',
    '/x/..%5c..%5coutside.html',
  ]) {
    const res = await raw(base, path);
    assert.not.match(res.body, 'OUTSIDE THE ROOT', path);
    assert.not.match(res.body, 'root:', path);
  }
  // The splat does name files inside the root.
  assert.equal(await get(`${base}/x/gone.html`), { status: 200, location: null, body: 'gone page' });
});

test('a redirect whose splat begins with // stays on this site', async () => {
  const res = await get(`${base}/y//evil.example/path`);
  assert.is(res.status, 301);
  assert.is(res.location, '/evil.example/path');
  assert.is((await get(`${base}/y/blog/post`)).location, '/blog/post');
});

test("_headers: every matching rule's headers on files, rewrites and 304s; the file itself not served", async () => {
  const headers = parseHeaders(
    '/*\n  X-Frame-Options: DENY\n  Link: </a.css>; rel=preload\n/assets/*\n' +
      '  Cache-Control: public, max-age=31536000, immutable\n  Link: </b.css>; rel=preload\n',
  );
  assert.equal(headers.errors, []);
  const at = await serve({ redirects: rules, headers: headers.rules });
  const asset = await fetch(`${at}/assets/app.js`);
  assert.is(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  assert.is(asset.headers.get('x-frame-options'), 'DENY');
  assert.is(asset.headers.get('link'), '</a.css>; rel=preload, </b.css>; rel=preload', 'joined in order');
  const again = await fetch(`${at}/assets/app.js`, { headers: { 'if-none-match': asset.headers.get('etag')! } });
  assert.is(again.status, 304);
  assert.is(again.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  const home = await fetch(`${at}/`);
  assert.is(home.headers.get('cache-control'), 'public, max-age=0, must-revalidate', 'the default stays elsewhere');
  assert.is(home.headers.get('x-frame-options'), 'DENY');
  const deep = await fetch(`${at}/app/deep`);
  assert.is(await deep.text(), 'home page');
  assert.is(deep.headers.get('x-frame-options'), 'DENY', 'a rewrite gets the headers of the path asked');
  for (const file of ['_headers', '_redirects'])
    assert.is(await (await fetch(`${at}/${file}`)).text(), 'home page', `${file} is not served`);
});

test('without rules the server behaves as before', async () => {
  assert.equal(await get(`${plain}/nope`), { status: 404, location: null, body: 'site missing page' });
  assert.equal(await get(`${plain}/`), { status: 200, location: null, body: 'home page' });
  assert.is((await get(`${plain}/docs`)).location, '/docs/');
  assert.equal(await get(`${plain}/gone`), { status: 200, location: null, body: 'gone page' });
  assert.is((await get(`${plain}/old/42`)).status, 404);
  assert.equal(await get(`${base}/.env`), { status: 404, location: null, body: 'site missing page' });
});

/** A site's rules without a fallback (missing paths are 404s), and _headers for redirects and 404s. */
const NO_FALLBACK = '/old/:id /new/:id 301\n/removed /gone.html 410\n/missing-404 /nowhere.html 404\n';
const SITE_HEADERS =
  '/*\n  X-Frame-Options: DENY\n  X-Robots-Tag: all\n/old/*\n  X-Old: moved\n/docs\n  X-Docs: yes\n' +
  '/missing/*\n  Cache-Control: public, max-age=60\n  Content-Type: text/plain\n/404.html\n  X-Page: not-found\n';

/** The headers of an answer but those node:http adds to any (Date, Connection, Keep-Alive). */
function answerHeaders(res: Response): Record<string, string> {
  const { date: _date, connection: _connection, 'keep-alive': _keepAlive, ...rest } = Object.fromEntries(res.headers);
  return rest;
}

test("_headers on redirects, the folder redirect, 404s and 410s: the path asked's rules, as at the edge", async () => {
  const at = await serve({ redirects: parseRedirects(NO_FALLBACK).rules, headers: parseHeaders(SITE_HEADERS).rules });
  const ask = (path: string, init?: RequestInit) => fetch(`${at}${path}`, { redirect: 'manual', ...init });
  const moved = await ask('/old/42?x=1');
  assert.is(moved.status, 301);
  assert.is(moved.headers.get('location'), '/new/42?x=1');
  assert.is(moved.headers.get('content-length'), '0');
  assert.is(moved.headers.get('x-frame-options'), 'DENY', 'the /* rule');
  assert.is(moved.headers.get('x-old'), 'moved', "the rule of the path's own");
  // The release's own headers (a draft's noindex) are the edge's, which proxies this server.
  assert.is(moved.headers.get('x-robots-tag'), 'all');
  const folder = await ask('/docs?v=2');
  assert.is(folder.status, 301);
  assert.is(folder.headers.get('location'), '/docs/?v=2');
  assert.is(folder.headers.get('x-frame-options'), 'DENY');
  assert.is(folder.headers.get('x-docs'), 'yes');
  assert.is(folder.headers.get('x-old'), null, 'only the rules that match the path asked');

  const missing = await ask('/nope');
  assert.is(missing.status, 404);
  assert.is(await missing.text(), 'site missing page');
  assert.is(missing.headers.get('x-frame-options'), 'DENY');
  assert.is(missing.headers.get('x-page'), null, "the path asked's rules, not those of /404.html");
  assert.is(missing.headers.get('cache-control'), 'no-store', 'the default where no rule sets it');
  assert.is((await ask('/404.html')).headers.get('x-page'), 'not-found', 'the /404.html rule is on the file itself');
  const ruled = await ask('/missing/x');
  assert.is(ruled.status, 404);
  assert.is(ruled.headers.get('cache-control'), 'public, max-age=60', "over the server's own, as on files");
  assert.is(ruled.headers.get('content-type'), 'text/plain');
  for (const [path, status] of [
    ['/removed', 410],
    ['/missing-404', 404],
    ['/.env', 404],
  ] as const) {
    const res = await ask(path);
    assert.is(res.status, status, path);
    assert.is(res.headers.get('x-frame-options'), 'DENY', path);
  }
  const bad = await ask('/%E0%A4%A');
  assert.is(bad.status, 400);
  assert.is(bad.headers.get('x-frame-options'), null, 'a 400 is no answer about the site: no custom headers');
  const post = await ask('/', { method: 'POST' });
  assert.is(post.status, 405);
  assert.is(post.headers.get('x-frame-options'), null, 'nor a 405');
});

test('a site without _headers answers its redirects and 404s with the headers it had before', async () => {
  const at = await serve({ redirects: parseRedirects(NO_FALLBACK).rules });
  const ask = (path: string) => fetch(`${at}${path}`, { redirect: 'manual' });
  assert.equal(answerHeaders(await ask('/old/42?x=1')), { location: '/new/42?x=1', 'content-length': '0' });
  assert.equal(answerHeaders(await ask('/docs')), { location: '/docs/', 'transfer-encoding': 'chunked' });
  const notFound = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' };
  for (const path of ['/nope', '/.env', '/removed'])
    assert.equal(answerHeaders(await ask(path)), { ...notFound, 'transfer-encoding': 'chunked' }, path);
});

test.run();
