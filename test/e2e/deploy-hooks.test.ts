// legs: db
// Deploy hooks on a running Hoist: a POST to the secret URL builds and deploys the live version again (a new
// release, source deploy_hook, no user); the URL is shown once and stored only as its hash; every bad input and
// every stale URL answers its error and starts nothing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';
import { liveMember } from '../helpers/live-member.js';

let h: LiveHoist;
let token: string;
test.before(async () => {
  h = await liveHoist();
  ({ token } = await h.login());
});
test.after(async () => h?.close());

const call = (method: string, path: string, body?: unknown, t = token) => h.call(t, method, path, body);
const operationCount = async () =>
  Number((await h.running.kernel.orm.em.fork().getConnection().execute('select count(*) as n from operations'))[0].n);

/** POSTs `body` (raw, with `type`) to a hook URL, as a CMS does: no Authorization header. */
async function fire(url: string, body: string | Blob = '{"event":"entry.publish"}', type = 'application/json') {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': type }, body });
  return { status: res.status, body: await res.json() };
}

async function deployed(name: string) {
  const res = await h.upload(token, '/api/v1/local-to-live', await zipOf({ 'index.html': `<h1>${name}</h1>` }), {
    name,
  });
  const body = await res.json();
  const op = await h.waitFor(token, body.operation.id);
  assert.is(op.status, 'succeeded');
  return { projectId: body.project.id as string, host: hostOf(body.project.url) };
}

test('a POST to the URL builds and deploys the live version again; the URL shows once', async () => {
  const { projectId, host } = await deployed('hooked-site');
  const made = await call('POST', `/api/v1/projects/${projectId}/deploy-hooks`, { name: 'CMS publish' });
  assert.is(made.status, 201, JSON.stringify(made.body));
  assert.match(made.body.url, new RegExp(`^${h.api}/api/v1/deploy-hooks/dh_[A-Za-z0-9_-]{43}$`));
  assert.equal([made.body.name, made.body.last_triggered_at], ['CMS publish', null]);
  const secret = made.body.url.split('/').pop();
  const me = (await call('GET', '/api/v1/me')).body.user;
  const listed = await call('GET', `/api/v1/projects/${projectId}/deploy-hooks`);
  assert.equal(listed.body.deploy_hooks, [
    {
      id: made.body.id,
      name: 'CMS publish',
      created_by: { user_id: me.id, email: me.email },
      created_at: made.body.created_at,
      last_triggered_at: null,
    },
  ]);
  const rows = await h.running.kernel.orm.em.fork().getConnection().execute('select * from deploy_hooks');
  assert.not.ok(JSON.stringify(rows).includes(secret), 'only its hash is stored');

  const before = (await h.site(host)).headers['x-hoist-release'];
  const fired = await fire(made.body.url);
  assert.is(fired.status, 202, JSON.stringify(fired.body));
  assert.is(fired.body.action, 'deploy_hook_queued');
  assert.is(fired.body.project.id, projectId);
  const op = await h.waitFor(token, fired.body.operation.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  const after = await h.site(host);
  assert.is(after.status, 200);
  assert.match(after.body, /hooked-site/);
  assert.is.not(after.headers['x-hoist-release'], before, 'a new release serves');
  assert.is(after.headers['x-hoist-release'], op.result.deployment_id);
  const release = (await call('GET', `/api/v1/projects/${projectId}/releases`)).body.releases[0];
  assert.equal([release.source, release.started_by], ['deploy_hook', null]);
  const [hook] = (await call('GET', `/api/v1/projects/${projectId}/deploy-hooks`)).body.deploy_hooks;
  assert.ok(hook.last_triggered_at, 'last_triggered_at is set');

  // Any body up to 64 KiB, of any type, is taken and dropped.
  for (const [body, type] of [
    ['payload=1&x=2', 'application/x-www-form-urlencoded'],
    ['', 'text/plain'],
  ]) {
    const again = await fire(made.body.url, body, type);
    assert.is(again.status, 202, `${type}: ${JSON.stringify(again.body)}`);
    assert.is((await h.waitFor(token, again.body.operation.id)).status, 'succeeded');
  }
});

test('a URL no hook has, a removed hook, a deleted project: 404; no live release: 409; nothing starts', async () => {
  const { projectId } = await deployed('hook-errors');
  const hook = (await call('POST', `/api/v1/projects/${projectId}/deploy-hooks`, { name: 'x' })).body;
  const ops = await operationCount();
  for (const url of [
    `${h.api}/api/v1/deploy-hooks/dh_${'A'.repeat(43)}`,
    `${h.api}/api/v1/deploy-hooks/not-a-token`,
    `${h.api}/api/v1/deploy-hooks/${hook.url.split('/').pop()}x`,
    `${h.api}/api/v1/deploy-hooks/${'x'.repeat(500)}`,
  ]) {
    const res = await fire(url);
    assert.is(res.status, 404, url);
    assert.is(res.body.error.code, 'not_found');
  }
  const wrongMethod = await fetch(hook.url);
  assert.is(wrongMethod.status, 404);
  assert.not.ok((await wrongMethod.text()).includes(hook.url.split('/').pop()), 'a 404 does not echo the secret');
  const big = await fire(hook.url, new Blob([new Uint8Array(100 * 1024)]), 'application/octet-stream');
  assert.is(big.status, 413, JSON.stringify(big.body));
  assert.is((await call('DELETE', `/api/v1/projects/${projectId}/deploy-hooks/${hook.id}`)).status, 204);
  assert.is((await fire(hook.url)).status, 404, 'a removed hook stops at once');
  assert.is((await call('DELETE', `/api/v1/projects/${projectId}/deploy-hooks/${hook.id}`)).status, 404);

  const empty = (await call('POST', '/api/v1/projects/', { name: 'never-deployed' })).body.id;
  const idle = (await call('POST', `/api/v1/projects/${empty}/deploy-hooks`, { name: 'too soon' })).body;
  const early = await fire(idle.url);
  assert.is(early.status, 409);
  assert.is(early.body.error.code, 'conflict');
  assert.match(early.body.error.message, /no live release/);
  assert.is(await operationCount(), ops, 'no operation started');

  const doomed = (await call('POST', `/api/v1/projects/${projectId}/deploy-hooks`, { name: 'doomed' })).body;
  assert.is((await call('DELETE', `/api/v1/projects/${projectId}`)).status < 300, true);
  const withDeletion = await operationCount();
  assert.is((await fire(doomed.url)).status, 404, "a deleted project's hook");
  assert.is(await operationCount(), withDeletion, 'no operation started');
});

test("bad names 400, another account's project 404, the plan's cap 403: nothing stored", async () => {
  const { token: free } = await h.login('free');
  const { token: other } = await h.login('pro');
  const id = (await call('POST', '/api/v1/projects/', { name: 'hook-limits' }, free)).body.id;
  for (const body of [{}, { name: '' }, { name: '   ' }, { name: 'x'.repeat(101) }, { name: 'a\u0007b' }])
    assert.is(
      (await call('POST', `/api/v1/projects/${id}/deploy-hooks`, body, free)).status,
      400,
      JSON.stringify(body),
    );
  for (const [method, path] of [
    ['GET', `/api/v1/projects/${id}/deploy-hooks`],
    ['POST', `/api/v1/projects/${id}/deploy-hooks`],
  ])
    assert.is((await call(method, path, method === 'POST' ? { name: 'mine' } : undefined, other)).status, 404);
  for (const n of [1, 2])
    assert.is((await call('POST', `/api/v1/projects/${id}/deploy-hooks`, { name: `h${n}` }, free)).status, 201);
  const third = await call('POST', `/api/v1/projects/${id}/deploy-hooks`, { name: 'h3' }, free);
  assert.is(third.status, 403);
  assert.is(third.body.error.code, 'plan_restricted');
  const hooks = (await call('GET', `/api/v1/projects/${id}/deploy-hooks`, undefined, free)).body.deploy_hooks;
  assert.equal(
    hooks.map((x: { name: string }) => x.name),
    ['h1', 'h2'],
  );
  assert.is((await call('DELETE', `/api/v1/projects/${id}/deploy-hooks/${hooks[0].id}`, undefined, other)).status, 404);
});

test('created_by names the member who made a hook, kept when they are removed; null for older ones', async () => {
  const { token: owner } = await h.login('pro');
  const projectId = (await call('POST', '/api/v1/projects/', { name: 'hooks-by-member' }, owner)).body.id;
  const member = await liveMember(h, owner);
  const path = `/api/v1/projects/${projectId}/deploy-hooks`;
  const made = await call('POST', path, { name: 'member CMS' }, member.token);
  assert.is(made.status, 201, JSON.stringify(made.body));
  const by = { user_id: member.id, email: member.email };
  assert.equal(made.body.created_by, by);
  const ownerMe = (await call('GET', '/api/v1/me', undefined, owner)).body.user;
  const mine = (await call('POST', path, { name: 'owner CMS' }, owner)).body;
  assert.equal(mine.created_by, { user_id: ownerMe.id, email: ownerMe.email });

  assert.is((await call('DELETE', `/api/v1/account/members/${member.id}`, undefined, owner)).status, 204);
  // The hook stays the account's (its URL works on): the owner sees who made it, to remove or recreate it.
  const makers = async () =>
    Object.fromEntries(
      (await call('GET', path, undefined, owner)).body.deploy_hooks.map((x: any) => [x.id, x.created_by]),
    );
  assert.equal(await makers(), { [made.body.id]: by, [mine.id]: mine.created_by });
  await h.running.kernel.orm.em
    .fork()
    .getConnection()
    .execute(`update deploy_hooks set created_by = null where id = '${mine.id}'`);
  assert.equal(await makers(), { [made.body.id]: by, [mine.id]: null });
});

test.run();
