// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AccessGrant } from '../../../core/entities/access-grant.js';
import { Project } from '../../../core/entities/project.js';
import { testApi, type TestAccount, type TestApi } from '../../helpers/api.js';

let t: TestApi;
let pro: TestAccount;
let other: TestAccount;

test.before(async () => {
  t = await testApi();
  pro = await t.account({ plan: 'pro' });
  other = await t.account({ plan: 'pro' });
});
test.after(async () => t?.close());

async function call(who: TestAccount, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) {
  const res = await t.app.inject({ method, url: `/api/v1${url}`, headers: who.auth, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : null, text: res.body };
}
const newProject = async (who: TestAccount, body: object) => (await call(who, 'POST', '/projects/', body)).body;
const grants = (projectId: string) => t.inContext(() => t.kernel.orm.em.find(AccessGrant, { projectId }));
const projectRow = (id: string) =>
  t.inContext(() => t.kernel.orm.em.findOne(Project, { id }, { disableIdentityMap: true }));

test(
  'grants are added only to private projects: 409 saying to make it private, ' +
    'nothing written; a draft project lists none',
  async () => {
    const p = await newProject(pro, { name: 'draft-site' });
    const res = await call(pro, 'POST', `/projects/${p.id}/access-grants`, { email: 'a@example.com' });
    assert.is(res.status, 409);
    assert.is(res.body.error.code, 'conflict');
    assert.match(res.body.error.message, /make it private/i);
    assert.is((await grants(p.id)).length, 0);
    assert.equal((await call(pro, 'GET', `/projects/${p.id}/access-grants`)).body, {
      access_grants: [],
      in_effect: false,
    });
    const none = await call(pro, 'DELETE', `/projects/${p.id}/access-grants/a@example.com`);
    assert.is(none.status, 404);
    assert.is(none.body.error.code, 'not_found');
  },
);

test('add (normalised, idempotent), list and remove by id or by e-mail', async () => {
  const p = await newProject(pro, { name: 'private-site', visibility: 'private' });
  const added = await call(pro, 'POST', `/projects/${p.id}/access-grants`, { email: '  Alice@Example.COM ' });
  assert.is(added.status, 201);
  assert.equal(Object.keys(added.body).sort(), ['created_at', 'email', 'id']);
  assert.is(added.body.email, 'alice@example.com');
  const again = await call(pro, 'POST', `/projects/${p.id}/access-grants`, { email: 'alice@example.com' });
  assert.is(again.status, 200);
  assert.is(again.body.id, added.body.id);
  await call(pro, 'POST', `/projects/${p.id}/access-grants`, { email: 'bob@example.com' });
  const list = await call(pro, 'GET', `/projects/${p.id}/access-grants`);
  assert.is(list.status, 200);
  assert.equal(
    list.body.access_grants.map((g: { email: string }) => g.email),
    ['alice@example.com', 'bob@example.com'],
  );
  assert.is(list.body.in_effect, true);

  assert.is((await call(pro, 'DELETE', `/projects/${p.id}/access-grants/${added.body.id}`)).status, 204);
  assert.is((await call(pro, 'DELETE', `/projects/${p.id}/access-grants/BOB@example.com`)).status, 204);
  const gone = await call(pro, 'DELETE', `/projects/${p.id}/access-grants/${added.body.id}`);
  assert.is(gone.status, 404);
  assert.is(gone.body.error.code, 'not_found');
  assert.is((await grants(p.id)).length, 0);
});

test('a bad e-mail is 400 invalid_request (field email) and writes nothing', async () => {
  const p = await newProject(pro, { name: 'bad-mail', visibility: 'private' });
  for (const email of ['not-an-email', '', 'a b@example.com', 'x@y', `${'a'.repeat(320)}@example.com`]) {
    const res = await call(pro, 'POST', `/projects/${p.id}/access-grants`, { email });
    assert.is(res.status, 400, email);
    assert.is(res.body.error.code, 'invalid_request');
    assert.is(res.body.error.details.field, 'email');
  }
  const missing = await call(pro, 'POST', `/projects/${p.id}/access-grants`, {});
  assert.is(missing.status, 400);
  assert.is(missing.body.error.code, 'invalid_request');
  assert.is((await grants(p.id)).length, 0);
});

test("another account's project is 404 for every call, and its grants stay", async () => {
  const p = await newProject(pro, { name: 'mine', visibility: 'private' });
  await call(pro, 'POST', `/projects/${p.id}/access-grants`, { email: 'keep@example.com' });
  for (const [method, url, body] of [
    ['GET', `/projects/${p.id}/access-grants`],
    ['POST', `/projects/${p.id}/access-grants`, { email: 'intruder@example.com' }],
    ['DELETE', `/projects/${p.id}/access-grants/keep@example.com`],
  ] as const) {
    const res = await call(other, method, url, body);
    assert.is(res.status, 404, `${method} ${url}`);
    assert.is(res.body.error.code, 'not_found');
  }
  assert.equal(
    (await grants(p.id)).map((g) => g.email),
    ['keep@example.com'],
  );
});

test('beyond the plan limit is 403 plan_restricted with the plan fields', async () => {
  const p = await newProject(pro, { name: 'crowded', visibility: 'private' });
  for (let i = 0; i < 25; i++)
    assert.is((await call(pro, 'POST', `/projects/${p.id}/access-grants`, { email: `v${i}@example.com` })).status, 201);
  const res = await call(pro, 'POST', `/projects/${p.id}/access-grants`, { email: 'one-more@example.com' });
  assert.is(res.status, 403);
  assert.is(res.body.error.code, 'plan_restricted');
  assert.equal(
    {
      feature: res.body.error.feature,
      plan: res.body.error.plan,
      required_plan: res.body.error.required_plan,
      limit: res.body.error.limit,
      usage: res.body.error.usage,
    },
    { feature: 'access_grants_per_project', plan: 'pro', required_plan: 'team', limit: 25, usage: 25 },
  );
  // An address already granted is still answered (idempotent), not refused.
  assert.is((await call(pro, 'POST', `/projects/${p.id}/access-grants`, { email: 'v0@example.com' })).status, 200);
  assert.is((await grants(p.id)).length, 25);
});

test('concurrent adds never pass the plan limit: exactly 25 are created, the rest 403', async () => {
  const p = await newProject(pro, { name: 'rush', visibility: 'private' });
  const answers = await Promise.all(
    Array.from({ length: 32 }, (_, i) =>
      call(pro, 'POST', `/projects/${p.id}/access-grants`, { email: `r${i}@example.com` }),
    ),
  );
  const statuses = answers.map((a) => a.status);
  assert.is(statuses.filter((s) => s === 201).length, 25, statuses.join(' '));
  assert.is(statuses.filter((s) => s === 403).length, 7, statuses.join(' '));
  assert.is((await grants(p.id)).length, 25);
});

test(
  'grants stay dormant while the project is not private: listed (in_effect false) ' +
    'and removable, and back in effect with it',
  async () => {
    const p = await newProject(pro, { name: 'flip', visibility: 'private' });
    const stay = (await call(pro, 'POST', `/projects/${p.id}/access-grants`, { email: 'stay@example.com' })).body;
    const go = (await call(pro, 'POST', `/projects/${p.id}/access-grants`, { email: 'go@example.com' })).body;
    for (const visibility of ['public', 'draft']) {
      assert.is((await call(pro, 'PATCH', `/projects/${p.id}/`, { visibility })).status, 200);
      const kept = await call(pro, 'GET', `/projects/${p.id}/access-grants`);
      assert.is(kept.status, 200, JSON.stringify(kept.body));
      assert.equal(kept.body, { access_grants: [stay, go], in_effect: false }, visibility);
      // Adding still needs a private project; nothing is written.
      assert.is((await call(pro, 'POST', `/projects/${p.id}/access-grants`, { email: 'new@example.com' })).status, 409);
      assert.is((await grants(p.id)).length, 2);
    }
    // A kept grant can go before the project is private again.
    assert.is((await call(pro, 'DELETE', `/projects/${p.id}/access-grants/go@example.com`)).status, 204);
    assert.is((await call(pro, 'PATCH', `/projects/${p.id}/`, { visibility: 'private' })).status, 200);
    assert.equal((await call(pro, 'GET', `/projects/${p.id}/access-grants`)).body, {
      access_grants: [stay],
      in_effect: true,
    });
    // Another account's project is still a 404, whatever its visibility.
    assert.is((await call(other, 'GET', `/projects/${p.id}/access-grants`)).status, 404);
  },
);

test('the access password: set at creation, stored as argon2id, never returned; cleared with null', async () => {
  const secret = 'open sesame 42';
  const created = await call(pro, 'POST', '/projects/', {
    name: 'with-password',
    visibility: 'private',
    access_password: secret,
  });
  assert.is(created.status, 201);
  assert.is(created.body.access_password_set, true);
  assert.not.ok(created.text.includes(secret));
  assert.not.ok('access_password' in created.body);
  const row = await projectRow(created.body.id);
  assert.match(row!.accessPasswordHash!, /^\$argon2id\$/);
  const read = await call(pro, 'GET', `/projects/${created.body.id}/`);
  assert.is(read.body.access_password_set, true);
  assert.not.ok(read.text.includes('argon2'));

  const changed = await call(pro, 'PATCH', `/projects/${created.body.id}/`, { access_password: 'another password' });
  assert.is(changed.status, 200);
  assert.is.not((await projectRow(created.body.id))!.accessPasswordHash, row!.accessPasswordHash);
  const cleared = await call(pro, 'PATCH', `/projects/${created.body.id}/`, { access_password: null });
  assert.is(cleared.body.access_password_set, false);
  assert.is((await projectRow(created.body.id))!.accessPasswordHash, null);
  assert.is(
    (await call(pro, 'GET', '/projects/?limit=100')).body.projects.find((x: { id: string }) => x.id === created.body.id)
      .access_password_set,
    false,
  );
});

test('a short, long or non-string access password is 400 (field access_password) and changes nothing', async () => {
  const before = (await call(pro, 'GET', '/projects/?limit=100')).body.projects.length;
  for (const access_password of ['short', 'x'.repeat(201)]) {
    const res = await call(pro, 'POST', '/projects/', { name: 'refused', visibility: 'private', access_password });
    assert.is(res.status, 400);
    assert.is(res.body.error.code, 'invalid_request');
    assert.is(res.body.error.details.field, 'access_password');
  }
  const bad = await call(pro, 'POST', '/projects/', { name: 'refused', access_password: { x: 1 } });
  assert.is(bad.status, 400);
  assert.is((await call(pro, 'GET', '/projects/?limit=100')).body.projects.length, before);

  const p = await newProject(pro, {
    name: 'keeps-password',
    visibility: 'private',
    access_password: 'a good password',
  });
  const hash = (await projectRow(p.id))!.accessPasswordHash;
  const res = await call(pro, 'PATCH', `/projects/${p.id}/`, { access_password: '1234567' });
  assert.is(res.status, 400);
  assert.is(res.body.error.details.field, 'access_password');
  assert.is((await projectRow(p.id))!.accessPasswordHash, hash);
  const foreign = await call(other, 'PATCH', `/projects/${p.id}/`, { access_password: 'a takeover password' });
  assert.is(foreign.status, 404);
  assert.is((await projectRow(p.id))!.accessPasswordHash, hash);
});

test('deleting the project deletes its grants', async () => {
  const p = await newProject(pro, { name: 'to-delete', visibility: 'private' });
  await call(pro, 'POST', `/projects/${p.id}/access-grants`, { email: 'gone@example.com' });
  assert.is((await call(pro, 'DELETE', `/projects/${p.id}/`)).status, 202);
  const end = Date.now() + 20_000;
  while ((await grants(p.id)).length > 0) {
    if (Date.now() > end) throw new Error('the grants outlived their project');
    await new Promise((r) => setTimeout(r, 50));
  }
});

test.run();
