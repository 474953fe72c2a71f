// legs: db
import { createHash } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { plans } from '../../../core/billing/plans.js';
import { STORAGE } from '../../../core/ports/storage.js';
import { testApi, type TestAccount, type TestApi } from '../../helpers/api.js';

let t: TestApi;
test.before(async () => {
  t = await testApi();
});
test.after(async () => t?.close());

const sha = (body: string) => createHash('sha256').update(body).digest('hex');
const send = (a: TestAccount, n: number, path = `page-${n}.html`) =>
  t.app.inject({
    method: 'POST',
    url: '/api/v1/upload-manifests',
    headers: a.auth,
    payload: { files: [{ path, sha256: sha(String(n)), size: String(n).length }] },
  });

/** The manifests Storage holds for the account. */
async function stored(accountId: string): Promise<number> {
  let n = 0;
  for await (const o of t.kernel.get(STORAGE).list(`upload-manifests/${accountId}/`)) n += o ? 1 : 0;
  return n;
}

test("past the plan's upload_manifests_per_hour: 429 rate_limited with Retry-After, nothing stored", async () => {
  const limit = plans.free.limits.upload_manifests_per_hour;
  const [a, b] = [await t.account(), await t.account()];
  for (let i = 0; i < limit - 1; i++) assert.is((await send(a, i)).statusCode, 201);
  // A bad manifest counts too: it was sent.
  assert.is((await send(a, 0, '../escape')).statusCode, 400);
  const res = await send(a, limit);
  assert.is(res.statusCode, 429, res.body);
  const { error } = res.json();
  assert.is(error.code, 'rate_limited');
  assert.match(error.message, `${limit} upload manifests an hour`);
  const retry = Number(res.headers['retry-after']);
  assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 3600, `Retry-After ${res.headers['retry-after']}`);
  assert.equal(error.details, { limit, retry_after: retry });
  assert.is(await stored(a.accountId), limit - 1, 'neither the bad nor the refused manifest was stored');
  // Refused ones do not count: the window still holds `limit`, and the next one is refused the same way.
  assert.is((await send(a, limit + 1)).statusCode, 429);
  // Another account is not affected.
  const other = await send(b, 0);
  assert.is(other.statusCode, 201, other.body);
  assert.is(await stored(b.accountId), 1);
});

/** A manifest of `n` files of `size` bytes each (distinct contents, none sent before). */
const sized = (a: TestAccount, n: number, size: number) =>
  t.app.inject({
    method: 'POST',
    url: '/api/v1/upload-manifests',
    headers: a.auth,
    payload: {
      files: Array.from({ length: n }, (_, i) => ({ path: `f${i}.bin`, sha256: sha(`${size}:${i}`), size })),
    },
  });

const LARGER = "a manifest larger than the largest ZIP the account could upload: 403 past the plan's archive_bytes";
test(`${LARGER}, 413 past the server's`, async () => {
  const max = t.kernel.config.maxArchiveBytes;
  const free = plans.free.limits.archive_bytes;
  assert.ok(free < max && plans.pro.limits.archive_bytes > max, 'free is bound by its plan, pro by the server');
  const [a, b] = [await t.account({ plan: 'free' }), await t.account({ plan: 'pro' })];
  // One copy of a content at many paths counts at every path: what the upload would pack.
  const atLimit = await sized(a, 5, free / 5);
  assert.is(atLimit.statusCode, 201, atLimit.body);
  assert.is(atLimit.json().total_size, free);
  const overPlan = await sized(a, 5, free / 5 + 1);
  assert.is(overPlan.statusCode, 403, overPlan.body);
  const { error } = overPlan.json();
  assert.is(error.code, 'plan_restricted');
  assert.match(error.message, `at most ${free}`);
  assert.is(error.details.limit, free);
  assert.is(error.details.feature, 'archive_bytes');
  assert.is(error.details.usage, free + 5);
  assert.is(error.details.required_plan, 'pro');

  assert.is((await sized(b, 1, max)).statusCode, 201);
  const overServer = await sized(b, 1, max + 1);
  assert.is(overServer.statusCode, 413, overServer.body);
  assert.is(overServer.json().error.code, 'payload_too_large');
  assert.match(overServer.json().error.message, `at most ${max}`);
  assert.is(overServer.json().error.details.limit, max);
  assert.is(await stored(b.accountId), 1, 'the refused manifest was not stored');
});

test('the OpenAPI document names the 429', async () => {
  const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
  const op = doc.paths['/api/v1/upload-manifests'].post;
  assert.ok(op.responses['429'], Object.keys(op.responses).join());
  assert.ok(op.responses['403'] && op.responses['413'], Object.keys(op.responses).join());
  assert.match(op.description, 'upload_manifests_per_hour');
  assert.match(op.description, '`archive_bytes`');
  assert.match(op.description, 'serves one upload');
  const upload = doc.paths['/api/v1/local-to-live'].post;
  assert.ok(upload.responses['410'] && upload.responses['429'], Object.keys(upload.responses).join());
});

test.run();
