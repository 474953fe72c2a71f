// Two API processes and a worker on PostgreSQL (changes=postgres: LISTEN/NOTIFY), answers kept for an hour
// (HOIST_ANSWER_CACHE_SECONDS=3600): what an API process keeps of GET /me and of a finished operation is dropped by
// the writes other processes make — a plan change by `hoist accounts set-plan`, a later deploy going live (in the
// worker), the project's deletion (in the other API process). Each wait allows 5 s for the notification (a loaded
// machine does not fail it); a kept answer would last the hour.
import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hoistBin, root } from '../helpers/cli.js';
import { zipOf } from '../helpers/live.js';
import { cluster, type Cluster, type RoleProcess } from '../helpers/roles.js';

let c: Cluster;
let a: RoleProcess;
let b: RoleProcess;
let token: string;
test.before(async () => {
  c = await cluster({ HOIST_ANSWER_CACHE_SECONDS: '3600' });
  [a, b] = await Promise.all([c.start('api'), c.start('api'), c.start('worker')]);
  token = await c.login(a.url);
});
test.after(async () => c?.close());

const get = async (api: RoleProcess, path: string) => {
  const res = await fetch(`${api.url}/api/v1${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: await res.json() };
};
/** The answer of `path` on `api` once `check` holds of it (fails after 5 s). */
const until = async (api: RoleProcess, path: string, check: (r: { status: number; body: any }) => boolean) => {
  const start = performance.now();
  for (;;) {
    const r = await get(api, path);
    if (check(r)) return r;
    assert.ok(performance.now() - start < 5000, `still ${JSON.stringify(r.body)} 5 s after the change`);
    await sleep(5);
  }
};
const deploy = async (path: string, fields: Record<string, string>, page: string) => {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('file', new Blob([new Uint8Array(await zipOf({ 'index.html': page }))]), 'site.zip');
  const res = await fetch(`${a.url}/api/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: form,
  });
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  await until(a, `/operations/${body.operation.id}`, (r) => r.body.status === 'succeeded');
  return { opId: body.operation.id as string, projectId: body.project.id as string };
};

test('a plan change by the admin CLI reaches GET /me on both API processes', async () => {
  const { body } = await get(a, '/me');
  for (const api of [a, b]) assert.is((await get(api, '/me')).body.account.plan, 'team');
  await promisify(execFile)(
    process.execPath,
    [hoistBin, 'accounts', 'set-plan', '--email', body.user.email, '--plan', 'pro'],
    {
      cwd: root,
      env: c.env,
    },
  );
  for (const api of [a, b]) await until(api, '/me', (r) => r.body.account.plan === 'pro');
});

test('a later deploy (worker) and the deletion (other API process) reach the kept view of an operation', async () => {
  const first = await deploy('/local-to-live', { name: 'roles-kept' }, 'one');
  for (const api of [a, b]) assert.is((await get(api, `/operations/${first.opId}`)).body.result.live, true);
  await deploy(`/projects/${first.projectId}/local-to-live`, {}, 'two');
  for (const api of [a, b]) await until(api, `/operations/${first.opId}`, (r) => r.body.result.live === false);

  const del = await fetch(`${a.url}/api/v1/projects/${first.projectId}/`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${token}` },
  });
  const deletion = await del.json();
  assert.is(del.status, 202, JSON.stringify(deletion));
  await until(a, `/operations/${deletion.operation.id}`, (r) => r.body.status === 'succeeded');
  assert.is((await get(a, `/operations/${first.opId}`)).status, 404, 'the process that deleted it: at once');
  await until(b, `/operations/${first.opId}`, (r) => r.status === 404);
});

test.run();
