// legs: db
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Version } from '../../core/entities/version.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
test.before(async () => {
  h = await liveHoist();
  ({ token } = await h.login());
});
test.after(async () => h?.close());

const del = async (id: string) => {
  const res = await fetch(`${h.api}/api/v1/projects/${id}/`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: await res.json() };
};

test('deleting a deployed project stops its release and removes its uploads and records', async () => {
  const up = await (await h.upload(token, '/api/v1/local-to-live', await zipOf({ 'index.html': 'doomed' }), { name: 'doomed' })).json();
  assert.is((await h.waitFor(token, up.operation.id)).status, 'succeeded');
  const releases = join(h.running.kernel.config.dataDir, 'releases');
  assert.is(readdirSync(releases).length >= 1, true);
  const before = readdirSync(releases).length;

  const res = await del(up.project.id);
  assert.is(res.status, 202, JSON.stringify(res.body));
  const op = await h.waitFor(token, res.body.operation.id);
  assert.is(op.status, 'succeeded');
  assert.is(readdirSync(releases).length, before - 1);
  assert.is((await h.site(hostOf(up.project.url))).status, 404);
  const versions = await h.running.kernel.orm.em.fork().count(Version, { projectId: up.project.id });
  assert.is(versions, 0);
  assert.is(existsSync(join(h.running.kernel.config.dataDir, 'storage', 'uploads')) ? readdirSync(join(h.running.kernel.config.dataDir, 'storage', 'uploads')).length : 0, 0);
  assert.is((await h.get(token, `/api/v1/projects/${up.project.id}/`)).status, 404);
});

test('deleting a project while its deployment runs is refused with 409', async () => {
  const create = await fetch(`${h.api}/api/v1/projects/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'busy', settings: { build_command: 'sleep 3', output_directory: '.' } }),
  });
  const project = await create.json();
  const up = await (await h.upload(token, `/api/v1/projects/${project.id}/local-to-live`, await zipOf({ 'index.html': 'busy' }))).json();
  const res = await del(project.id);
  assert.is(res.status, 409);
  assert.is(res.body.error.code, 'deployment_in_progress');
  assert.is(res.body.error.details.operation_id, up.operation.id);
  assert.is((await h.get(token, `/api/v1/projects/${project.id}/`)).status, 200);
  await h.waitFor(token, up.operation.id);
});

test.run();
