// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { IdempotencyRecord } from '../../core/entities/idempotency-record.js';
import { liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';
import { gatedProject } from '../helpers/gated-build.js';
import { footprint } from '../helpers/raw-http.js';

let h: LiveHoist;
let token: string;
let accountId: string;
let zip: Buffer;
test.before(async () => {
  h = await liveHoist();
  ({ token, accountId } = await h.login());
  zip = await zipOf({ 'index.html': 'idempotent' });
});
test.after(async () => h?.close());

const kernel = () => h.running.kernel;
let n = 0;
const newKey = () => `key-${++n}-${Date.now()}`;

/** An account-level upload with an Idempotency-Key; its status, body and replay header. */
async function upload(key: string, name: string, archive = zip, as = token, fields: Record<string, string> = {}) {
  const res = await h.upload(as, '/api/v1/local-to-live', archive, { name, ...fields }, { 'idempotency-key': key });
  return { status: res.status, body: await res.json(), replayed: res.headers.get('idempotent-replayed') };
}

/** `after` minus `before`, field by field. */
const grew = (before: Awaited<ReturnType<typeof footprint>>, after: Awaited<ReturnType<typeof footprint>>) =>
  Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - before[k as keyof typeof before]]));

test('same key and body → the first answer again; no second version, operation or stored upload', async () => {
  const key = newKey();
  const before = await footprint(kernel());
  const first = await upload(key, 'same-body');
  assert.is(first.status, 202, JSON.stringify(first.body));
  assert.is(first.replayed, null);
  // Sent again at once, while the chain still runs: the answer is replayed, not refused as in progress.
  const again = await upload(key, 'same-body');
  assert.is(again.status, 202, JSON.stringify(again.body));
  assert.is(again.replayed, 'true');
  assert.equal(again.body, first.body);
  // Counted once the chain is done: while it runs, Build's artifact and log pass through storage temp files.
  assert.is((await h.waitFor(token, first.body.operation.id)).status, 'succeeded');
  assert.equal(grew(before, await footprint(kernel())), {
    uploads: 1,
    temp: 0,
    versions: 1,
    operations: 1,
    projects: 1,
  });
});

test('same key, different body → 422 idempotency_key_reused; nothing stored', async () => {
  const key = newKey();
  const first = await upload(key, 'reused');
  assert.is(first.status, 202);
  await h.waitFor(token, first.body.operation.id);
  const before = await footprint(kernel());
  const other = await upload(key, 'reused', await zipOf({ 'index.html': 'another site' }));
  assert.is(other.status, 422, JSON.stringify(other.body));
  assert.is(other.body.error.code, 'idempotency_key_reused');
  const otherFields = await upload(key, 'reused', zip, token, { skip_build: 'true' });
  assert.is(otherFields.status, 422);
  assert.equal(await footprint(kernel()), before);
});

test('keys are per account: another account with the same key gets its own deployment', async () => {
  const key = newKey();
  const mine = await upload(key, 'per-account');
  const other = await h.login();
  const theirs = await upload(key, 'per-account', zip, other.token);
  assert.is(theirs.status, 202, JSON.stringify(theirs.body));
  assert.is(theirs.replayed, null);
  assert.is.not(theirs.body.operation.id, mine.body.operation.id);
  assert.is.not(theirs.body.project.id, mine.body.project.id);
  await h.waitFor(token, mine.body.operation.id);
  await h.waitFor(other.token, theirs.body.operation.id);
});

for (const [what, key] of [
  ['300 characters', 'k'.repeat(300)],
  ['spaces', 'has spaces'],
  ['a control character', 'tab\there'],
]) {
  test(`an Idempotency-Key with ${what} → 400 invalid_request; nothing stored`, async () => {
    const before = await footprint(kernel());
    const res = await upload(key, 'bad-key');
    assert.is(res.status, 400, JSON.stringify(res.body));
    assert.is(res.body.error.code, 'invalid_request');
    assert.equal(await footprint(kernel()), before);
  });
}

// Documented outcome: of concurrent requests with one key, one claims it and deploys; each other gets
// the remembered answer when the first has finished by then, else 409 conflict (retry in a moment).
test('concurrent requests with one key → one deployment; the others replay or get 409 conflict', async () => {
  const key = newKey();
  const before = await footprint(kernel());
  const results = await Promise.all([1, 2, 3].map(() => upload(key, 'concurrent')));
  const won = results.filter((r) => r.status === 202 && r.replayed === null);
  assert.is(won.length, 1, JSON.stringify(results));
  for (const r of results) {
    if (r === won[0]) continue;
    if (r.status === 202) assert.equal(r.body, won[0].body);
    else assert.equal([r.status, r.body.error.code], [409, 'conflict']);
  }
  // Counted once the chain is done, as above: its stage logs pass through storage temp files.
  await h.waitFor(token, won[0].body.operation.id);
  assert.equal(grew(before, await footprint(kernel())), {
    uploads: 1,
    temp: 0,
    versions: 1,
    operations: 1,
    projects: 1,
  });
});

test('a key is remembered 24 hours: older, the same request deploys again', async () => {
  const key = newKey();
  const first = await upload(key, 'expiry');
  await h.waitFor(token, first.body.operation.id);
  const em = kernel().orm.em.fork();
  const moved = await em.nativeUpdate(
    IdempotencyRecord,
    { id: `${accountId}:${key}` },
    { createdAt: new Date(Date.now() - 24 * 3600 * 1000 - 60_000) },
  );
  assert.is(moved, 1);
  const again = await upload(key, 'expiry');
  assert.is(again.status, 202, JSON.stringify(again.body));
  assert.is(again.replayed, null);
  assert.is.not(again.body.operation.id, first.body.operation.id);
  assert.is(again.body.project.id, first.body.project.id);
  await h.waitFor(token, again.body.operation.id);
  // The fresh answer is remembered in its turn.
  assert.is((await upload(key, 'expiry')).body.operation.id, again.body.operation.id);
});

test('a refused write is not remembered: the same key works once the refusal is gone', async () => {
  const gated = await gatedProject(h, token, 'refused-first');
  const running = await upload(newKey(), gated.name, await gated.zip());
  assert.is(running.status, 202, JSON.stringify(running.body));
  const key = newKey();
  const before = await footprint(kernel());
  const refused = await upload(key, gated.name, await gated.zip());
  assert.is(refused.status, 409, JSON.stringify(refused.body));
  assert.is(refused.body.error.code, 'deployment_in_progress');
  assert.equal(await footprint(kernel()), before);
  gated.open();
  assert.is((await h.waitFor(token, running.body.operation.id)).status, 'succeeded');
  const later = await upload(key, gated.name, await gated.zip());
  assert.is(later.status, 202, JSON.stringify(later.body));
  assert.is((await h.waitFor(token, later.body.operation.id)).status, 'succeeded');
});

test.run();
