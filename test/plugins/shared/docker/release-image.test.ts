import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import { zipOf } from '../../../helpers/live.js';
import * as assert from 'uvu/assert';
import { parseHeaders, parseRedirects } from '../../../../core/ports/site-rules.cjs';
import { StageError } from '../../../../core/errors.js';
import type { ReleaseSpec } from '../../../../core/ports/deployer.js';
import archiveZip from '../../../../plugins/archive-zip/index.js';
import { stageBuildContext } from '../../../../plugins/shared/docker/release-image.js';
import { LocalStorage } from '../../../../plugins/storage-local/local-storage.js';

const SITE_RULES = fileURLToPath(new URL('../../../../core/ports/site-rules.cjs', import.meta.url));

const root = mkdtempSync(join(tmpdir(), 'hoist-release-image-'));
const storage = new LocalStorage(join(root, 'storage'));
const archive = await archiveZip.create({});
const deps = { storage, archive };
const servers: Server[] = [];
test.before(() => storage.start());
test.after(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  rmSync(root, { recursive: true, force: true });
});

let n = 0;
/** `files` as an artifact in Storage, and a fresh (absent) build context folder; the spec of its release. */
async function artifact(files: Record<string, string>, over: Partial<ReleaseSpec> = {}) {
  const id = `dep-${++n}`;
  const artifactKey = `artifacts/${id}.zip`;
  await storage.put(artifactKey, Readable.from([await zipOf(files)]));
  const spec: ReleaseSpec = {
    deploymentId: id,
    accountId: 'acct-1',
    projectId: 'proj-1',
    slug: 'site',
    runtime: 'static',
    artifactKey,
    startCommand: null,
    env: {},
    ...over,
  };
  const dir = join(root, 'work', id);
  mkdirSync(dir, { recursive: true });
  return { spec, dir };
}

const stage = (dir: string, spec: ReleaseSpec) =>
  stageBuildContext(dir, spec, 'hoist-node-base:local', deps, new AbortController().signal);

const GOOD = '# SPA\n/old/:id /new/:id 301\n\n/* /index.html 200\n';

const HEADERS = '/*\n  X-Frame-Options: DENY\n/assets/*\n  Cache-Control: public, max-age=31536000, immutable\n';

test("a static site's _redirects and _headers: their rules in hoist/site-rules.json, beside the server", async () => {
  const { spec, dir } = await artifact({
    'index.html': 'home',
    'about.html': 'about',
    'assets/app.js': 'x',
    _redirects: GOOD,
    _headers: HEADERS,
  });
  assert.equal(await stage(dir, spec), ['Dockerfile', 'app', 'hoist']);
  assert.equal(readdirSync(join(dir, 'hoist')).sort(), [
    'entry.cjs',
    'site-rules.cjs',
    'site-rules.json',
    'static-server.cjs',
  ]);
  const rules = JSON.parse(readFileSync(join(dir, 'hoist', 'site-rules.json'), 'utf8'));
  assert.equal(rules.redirects, [
    { from: '/old/:id', to: '/new/:id', status: 301, force: false },
    { from: '/*', to: '/index.html', status: 200, force: false },
  ]);
  assert.equal(rules, { redirects: parseRedirects(GOOD).rules, headers: parseHeaders(HEADERS).rules });
  assert.is(readFileSync(join(dir, 'hoist', 'site-rules.cjs'), 'utf8'), readFileSync(SITE_RULES, 'utf8'));
  assert.match(readFileSync(join(dir, 'Dockerfile'), 'utf8'), 'COPY --chown=0:0 hoist /hoist');

  // The staged server loads beside its matcher and follows the staged rules.
  const { createStaticServer } = createRequire(import.meta.url)(join(dir, 'hoist', 'static-server.cjs')) as {
    createStaticServer(root: string, release: string, rules: object): Server;
  };
  const server = createStaticServer(join(dir, 'app'), spec.deploymentId, rules);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const deep = await fetch(`${base}/app/deep/link`);
  assert.is(deep.status, 200);
  assert.is(await deep.text(), 'home');
  assert.is((await fetch(`${base}/about`)).status, 200);
  assert.is((await fetch(`${base}/old/7`, { redirect: 'manual' })).headers.get('location'), '/new/7');
  const asset = await fetch(`${base}/assets/app.js`);
  assert.is(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  assert.is(asset.headers.get('x-frame-options'), 'DENY');
});

test('the _redirects of the artifact root (artifactRoot) is the one checked', async () => {
  const { spec, dir } = await artifact(
    { 'dist/index.html': 'home', 'dist/_redirects': '/a /b 302', _redirects: '/x https://other.example/ 200' },
    { artifactRoot: 'dist' },
  );
  await stage(dir, spec);
  assert.equal(JSON.parse(readFileSync(join(dir, 'hoist', 'site-rules.json'), 'utf8')), {
    redirects: [{ from: '/a', to: '/b', status: 302, force: false }],
  });
});

for (const [file, code, bad, said] of [
  [
    '_redirects',
    'deploy_redirects_invalid',
    '# fine so far\n/a https://other.example/x 200\n/ok /fine 301\n/b /c 301 Country=us\n',
    ['line 2: https://other.example/x: answering with', 'line 4: Country=us: conditions'],
  ],
  [
    '_headers',
    'deploy_headers_invalid',
    '/*\n  Set-Cookie: a=b\n  X-Ok: yes\n  Content-Length: 5\n',
    ['line 2: set-cookie', 'line 4: content-length: Hoist sets this header itself'],
  ],
] as const)
  test(`a refused ${file} rejects with ${code} naming each refused line`, async () => {
    const { spec, dir } = await artifact({ 'index.html': 'home', [file]: bad });
    const err = await stage(dir, spec).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof StageError, String(err));
    assert.is(err.code, code);
    for (const line of said) assert.match(err.message, line);
    assert.not.match(err.message, 'line 3');
    assert.equal(err.details.lines, [2, 4]);
    assert.not.ok(existsSync(join(dir, 'hoist', 'site-rules.json')));
  });

test('a _headers file over 256 KiB is refused unread, naming its size and the bound', async () => {
  const big = `/*\n${'  X-A: b\n'.repeat(40_000)}`;
  const { spec, dir } = await artifact({ 'index.html': 'home', _headers: big });
  const err = await stage(dir, spec).then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(err instanceof StageError, String(err));
  assert.is(err.code, 'deploy_headers_invalid');
  assert.is(err.message, `_headers is ${Buffer.byteLength(big)} bytes: at most 262144 are read`);
  assert.not.ok(existsSync(join(dir, 'hoist', 'site-rules.json')));
});

test('a static site without _redirects or _headers has no rules file; a Node.js app ignores them', async () => {
  const plain = await artifact({ 'index.html': 'home' });
  await stage(plain.dir, plain.spec);
  assert.ok(existsSync(join(plain.dir, 'hoist', 'static-server.cjs')));
  assert.not.ok(existsSync(join(plain.dir, 'hoist', 'site-rules.json')));

  const node = await artifact(
    { 'package.json': '{"name":"app"}', 'server.js': '', _redirects: '/b /c 301 Country=us\n' },
    { runtime: 'node', startCommand: 'node server.js' },
  );
  assert.equal(await stage(node.dir, node.spec), ['Dockerfile', 'app', 'hoist']);
  assert.not.ok(existsSync(join(node.dir, 'hoist', 'site-rules.json')));
  assert.ok(existsSync(join(node.dir, 'hoist', 'site-rules.cjs')));
  assert.ok(existsSync(join(node.dir, 'app', '_redirects')), 'the app keeps the file as any other');
});

test.run();
