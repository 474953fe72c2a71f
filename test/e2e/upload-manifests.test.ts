// legs: db
import { createHash, randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { footprint } from '../helpers/raw-http.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
let other: string;
test.before(async () => {
  h = await liveHoist();
  ({ token } = await h.login());
  ({ token: other } = await h.login());
});
test.after(async () => h?.close());

const sha = (body: string) => createHash('sha256').update(body).digest('hex');
const manifestOf = (files: Record<string, string>) =>
  Object.entries(files).map(([path, body]) => ({ path, sha256: sha(body), size: Buffer.byteLength(body) }));

async function sendManifest(files: unknown, as = token, gzip = false) {
  const body = JSON.stringify({ files });
  const res = await fetch(`${h.api}/api/v1/upload-manifests`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${as}`,
      'content-type': 'application/json',
      ...(gzip ? { 'content-encoding': 'gzip' } : {}),
    },
    body: gzip ? gzipSync(body) : body,
  });
  return { status: res.status, body: await res.json() };
}

/** Sends the manifest, then a ZIP of only the files the server named missing; the deploy's 202 body. */
async function deploy(name: string, files: Record<string, string>) {
  const m = await sendManifest(manifestOf(files));
  assert.is(m.status, 201, JSON.stringify(m.body));
  const missing = new Set<string>(m.body.missing);
  const sent = Object.fromEntries(Object.entries(files).filter(([, body]) => missing.has(sha(body))));
  const zip = Object.keys(sent).length ? await zipOf(sent) : null;
  const res = await h.upload(token, '/api/v1/local-to-live', zip, { name, manifest_id: m.body.id });
  return { missing: m.body.missing as string[], sent: Object.keys(sent), status: res.status, body: await res.json() };
}

const site = {
  'index.html': '<h1>one</h1>',
  'assets/app.js': 'console.log(1)',
  'assets/style.css': 'body{}',
};

test('a manifest upload sends only the files the account has not sent before, and deploys the whole site', async () => {
  const first = await deploy('manifest-site', site);
  assert.is(first.status, 202, JSON.stringify(first.body));
  assert.is(first.missing.length, 3);
  assert.is((await h.waitFor(token, first.body.operation.id)).status, 'succeeded');
  const host = hostOf(first.body.project.url);
  assert.is((await h.site(host, '/assets/app.js')).body, 'console.log(1)');

  // Nothing new: no file part at all, and the same site is live again.
  const again = await deploy('manifest-site', site);
  assert.equal(again.missing, []);
  assert.is(again.status, 202, JSON.stringify(again.body));
  assert.is((await h.waitFor(token, again.body.operation.id)).status, 'succeeded');
  assert.is((await h.site(host, '/')).body, '<h1>one</h1>');

  // One changed file: only its bytes travel; the others come from what was sent before.
  const changed = await deploy('manifest-site', { ...site, 'index.html': '<h1>two</h1>' });
  assert.equal(changed.sent, ['index.html']);
  assert.is((await h.waitFor(token, changed.body.operation.id)).status, 'succeeded');
  assert.is((await h.site(host, '/')).body, '<h1>two</h1>');
  assert.is((await h.site(host, '/assets/style.css')).body, 'body{}');

  // Known bytes at a new path, twice over: nothing travels, and every path gets them.
  const copies = await deploy('manifest-site', {
    ...site,
    'copy-a.js': 'console.log(1)',
    'b/copy.js': 'console.log(1)',
  });
  assert.equal(copies.missing, []);
  assert.is((await h.waitFor(token, copies.body.operation.id)).status, 'succeeded');
  assert.is((await h.site(host, '/copy-a.js')).body, 'console.log(1)');
  assert.is((await h.site(host, '/b/copy.js')).body, 'console.log(1)');
});

test('a gzip-compressed manifest is read, and files are kept per account', async () => {
  const files = manifestOf(site);
  const mine = await sendManifest(files, token, true);
  assert.is(mine.status, 201, JSON.stringify(mine.body));
  // The files deployed by the first test are known to their account only.
  const theirs = await sendManifest(files, other);
  assert.is(theirs.body.missing.length, 3);
  // Another account's manifest id is not found.
  const before = await footprint(h.running.kernel);
  const res = await h.upload(token, '/api/v1/local-to-live', null, { name: 'x', manifest_id: theirs.body.id });
  assert.is(res.status, 404);
  assert.equal(await footprint(h.running.kernel), before);
});

test('mismatched bytes, unlisted paths and missing files are refused, and nothing is kept', async () => {
  const files = { 'index.html': 'fresh page ' + Date.now() };
  // Each attempt sends a manifest of its own: a refused upload spends its manifest too.
  const fresh = async () => (await sendManifest(manifestOf(files))).body.id as string;
  const before = await footprint(h.running.kernel);

  const wrong = await h.upload(token, '/api/v1/local-to-live', await zipOf({ 'index.html': 'other bytes' }), {
    name: 'bad',
    manifest_id: await fresh(),
  });
  const wrongBody = await wrong.json();
  assert.is(wrong.status, 400, JSON.stringify(wrongBody));
  assert.is(wrongBody.error.details.path, 'index.html');
  assert.match(wrongBody.error.message, /do not match/);

  const unlisted = await h.upload(
    token,
    '/api/v1/local-to-live',
    await zipOf({ ...files, 'extra.html': 'not in the manifest' }),
    { name: 'bad', manifest_id: await fresh() },
  );
  assert.is(unlisted.status, 400);
  assert.match((await unlisted.json()).error.message, /does not list/);

  const spent = await fresh();
  const missing = await h.upload(token, '/api/v1/local-to-live', null, { name: 'bad', manifest_id: spent });
  const missingBody = await missing.json();
  assert.is(missing.status, 400);
  assert.equal(missingBody.error.details.missing, [sha(files['index.html'])]);
  // Refused after it was assembled, the manifest is spent all the same: sending the file now needs a new one.
  const again = await h.upload(token, '/api/v1/local-to-live', await zipOf(files), { name: 'bad', manifest_id: spent });
  const againBody = await again.json();
  assert.is(again.status, 410, JSON.stringify(againBody));
  assert.match(againBody.error.message, /send a new manifest/);

  assert.equal(await footprint(h.running.kernel), before, 'no upload, version, operation or project was left');
  // The refused bytes were not kept: the hash is still missing.
  assert.is((await sendManifest(manifestOf(files))).body.missing.length, 1);
});

test('a kept file named at a size it does not have is refused, before the site is laid out or packed', async () => {
  // A kept file of 64 KiB, claimed at 0 bytes at many paths (each would be packed whole), then at a size too large.
  const big = 'x'.repeat(64 * 1024) + Date.now();
  const first = await deploy('size-lie', { 'index.html': '<h1>size</h1>', 'big.png': big });
  assert.is(first.status, 202, JSON.stringify(first.body));
  assert.is((await h.waitFor(token, first.body.operation.id)).status, 'succeeded');
  const before = await footprint(h.running.kernel);
  const index = manifestOf({ 'index.html': '<h1>size</h1>' });
  for (const size of [0, big.length - 1, big.length + 1]) {
    const lying = Array.from({ length: 200 }, (_, i) => ({ path: `copy-${i}.png`, sha256: sha(big), size }));
    const m = await sendManifest([...index, ...lying]);
    assert.is(m.status, 201, JSON.stringify(m.body));
    assert.equal(m.body.missing, [], 'both files are kept');
    const res = await h.upload(token, '/api/v1/local-to-live', null, { name: 'size-lie', manifest_id: m.body.id });
    const body = await res.json();
    assert.is(res.status, 400, `${size}: ${JSON.stringify(body)}`);
    assert.match(body.error.message, new RegExp(`${sha(big)} is not ${size} bytes`));
  }
  const twoSizes = await sendManifest([
    { path: 'a.png', sha256: sha(big), size: big.length },
    { path: 'b.png', sha256: sha(big), size: 1 },
  ]);
  assert.is(twoSizes.status, 400);
  assert.match(twoSizes.body.error.message, /differs from another entry with the same sha256/);
  assert.equal(await footprint(h.running.kernel), before, 'no upload, version, operation or project was left');
});

const ONCE = 'a manifest serves one upload: another use is 410 gone';
test(`${ONCE}; a repeat with its Idempotency-Key gets the same 202`, async () => {
  const files = { 'index.html': '<h1>once</h1>', 'app.js': 'console.log("once")' };
  const first = await deploy('manifest-once', files);
  assert.is(first.status, 202, JSON.stringify(first.body));
  assert.is((await h.waitFor(token, first.body.operation.id)).status, 'succeeded');
  const m = await sendManifest(manifestOf(files));
  assert.equal(m.body.missing, []);
  const before = await footprint(h.running.kernel);
  // The request the review's proof of concept repeats: no file part, a manifest used before.
  const use = (headers: Record<string, string> = {}) =>
    h.upload(token, '/api/v1/local-to-live', null, { name: 'manifest-once', manifest_id: m.body.id }, headers);
  const key = { 'idempotency-key': `manifest-once-${Date.now()}` };
  const once = await use(key);
  const onceBody = await once.json();
  assert.is(once.status, 202, JSON.stringify(onceBody));
  assert.is((await h.waitFor(token, onceBody.operation.id)).status, 'succeeded');
  for (const headers of [{}, { 'idempotency-key': 'another-key' }] as Record<string, string>[]) {
    const reused = await use(headers);
    const body = await reused.json();
    assert.is(reused.status, 410, JSON.stringify(body));
    assert.is(body.error.code, 'gone');
    assert.match(body.error.message, /used already.*send a new manifest/);
  }
  // A retry of the first request (its answer lost on the way): replayed, nothing assembled or started again.
  const repeat = await use(key);
  const repeatBody = await repeat.json();
  assert.is(repeat.status, 202, JSON.stringify(repeatBody));
  assert.is(repeatBody.operation.id, onceBody.operation.id);
  const after = await footprint(h.running.kernel);
  assert.is(after.versions, before.versions + 1, 'one deployment for the four uses');
  assert.is(after.projects, before.projects);
});

const BUSY = "an account's manifest uploads are assembled one at a time: another one meanwhile is 429";
test(`${BUSY}, its manifest unspent`, async () => {
  // A kept file of 8 MiB, then sites listing it at several paths: each upload packs 24 MiB, with no file part.
  const big = randomBytes(8 << 20)
    .toString('base64')
    .slice(0, 8 << 20);
  const seeded = await deploy('assemble-seed', { 'index.html': '<h1>seed</h1>', 'big.bin': big });
  assert.is(seeded.status, 202, JSON.stringify(seeded.body));
  const site = (n: number) => ({ 'index.html': `<h1>${n}</h1>`, 'a/big.bin': big, 'b/big.bin': big, 'c/big.bin': big });
  const [a, b] = [manifestOf(site(1)), manifestOf(site(2))];
  const [ma, mb] = [await sendManifest(a), await sendManifest(b)];
  assert.is(ma.body.missing.length, 1);
  const zips = [await zipOf({ 'index.html': '<h1>1</h1>' }), await zipOf({ 'index.html': '<h1>2</h1>' })];
  const send = (i: number, id: string) =>
    h.upload(token, '/api/v1/local-to-live', zips[i], { name: `assemble-${i}`, manifest_id: id });
  const answers = await Promise.all([send(0, ma.body.id), send(1, mb.body.id)]);
  const statuses = answers.map((r) => r.status).sort();
  assert.equal(statuses, [202, 429], `statuses ${statuses}`);
  const busy = answers.find((r) => r.status === 429)!;
  const busyBody = await busy.json();
  assert.is(busyBody.error.code, 'rate_limited');
  assert.match(busyBody.error.message, /being assembled/);
  assert.ok(Number(busy.headers.get('retry-after')) >= 1, `Retry-After ${busy.headers.get('retry-after')}`);
  // The refused one did not spend its manifest: sent again once the other is done, it deploys.
  const i = answers.indexOf(busy);
  const retried = await send(i, [ma, mb][i].body.id);
  assert.is(retried.status, 202, JSON.stringify(await retried.json()));
});

test('a manifest path the archive checks would refuse is refused with 400', async () => {
  const bad = (path: string) => [{ path, sha256: sha('x'), size: 1 }];
  for (const path of ['../etc/passwd', '/abs.html', 'a\\b.html', 'a//b.html', 'C:/x.html', 'x\u0001.html']) {
    const res = await sendManifest(bad(path));
    assert.is(res.status, 400, path);
    assert.is(res.body.error.code, 'invalid_request', path);
  }
  const twice = await sendManifest([...bad('a.html'), ...bad('A.html')]);
  assert.is(twice.status, 400);
  assert.match(twice.body.error.message, /twice/);
  const fileAsFolder = await sendManifest([...bad('a'), ...bad('a/b.html')]);
  assert.is(fileAsFolder.status, 400);
  for (const path of [`${'n'.repeat(256)}.html`, `${'d/'.repeat(600)}x.html`, `${'é'.repeat(130)}.html`]) {
    const long = await sendManifest(bad(path));
    assert.is(long.status, 400, path.slice(0, 20));
    assert.is(long.body.error.details.code, 'archive_path_too_long');
  }
  const badHash = await sendManifest([{ path: 'a.html', sha256: 'XYZ', size: 1 }]);
  assert.is(badHash.status, 400);
  assert.is((await sendManifest([])).status, 400);
  // A path too deep for the archive checks is refused when the site is assembled, before anything is queued.
  const deep = Array.from({ length: 70 }, () => 'd').join('/') + '/x.html';
  const m = await sendManifest(bad(deep));
  if (m.status === 201) {
    const before = await footprint(h.running.kernel);
    const res = await h.upload(token, '/api/v1/local-to-live', await zipOf({ [deep]: 'x' }), {
      name: 'deep',
      manifest_id: m.body.id,
    });
    assert.is(res.status, 400);
    assert.equal(await footprint(h.running.kernel), before);
  }
});

test('an unknown manifest id is 404 and a malformed one 400', async () => {
  const zip = await zipOf(site);
  const unknown = await h.upload(token, '/api/v1/local-to-live', zip, {
    name: 'x',
    manifest_id: '00000000-0000-4000-8000-000000000000',
  });
  assert.is(unknown.status, 404);
  const malformed = await h.upload(token, '/api/v1/local-to-live', zip, { name: 'x', manifest_id: 'nope' });
  assert.is(malformed.status, 400);
  // Without manifest_id the file part is still required.
  assert.is((await h.upload(token, '/api/v1/local-to-live', null, { name: 'x' })).status, 400);
});

test.run();
