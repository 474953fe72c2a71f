// legs: db
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BuildLogChunk } from '../../core/entities/build-log-chunk.js';
import { Deployment, type ReleaseTarget } from '../../core/entities/deployment.js';
import { Version } from '../../core/entities/version.js';
import { objectsUnder } from '../helpers/raw-http.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
test.before(async () => {
  h = await liveHoist();
  ({ token } = await h.login());
});
test.after(async () => h?.close());

/**
 * Whether the release is still there: its folder (static, local deployer) or its server answering
 * with the site (http; a removed container's address may soon belong to another one).
 */
const reachable = async (target: ReleaseTarget) =>
  target.kind === 'http'
    ? fetch(target.url, { signal: AbortSignal.timeout(5000) }).then(
        async (r) => (await r.text()) === 'doomed',
        () => false,
      )
    : existsSync(target.root);

const del = async (id: string) => {
  const res = await fetch(`${h.api}/api/v1/projects/${id}/`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${token}` },
  });
  return { status: res.status, body: await res.json() };
};

test('deleting a deployed project stops its release and removes its uploads and records', async () => {
  const up = await (
    await h.upload(token, '/api/v1/local-to-live', await zipOf({ 'index.html': 'doomed' }), { name: 'doomed' })
  ).json();
  assert.is((await h.waitFor(token, up.operation.id)).status, 'succeeded');
  const em = () => h.running.kernel.orm.em.fork();
  const { target } = await em().findOneOrFail(Deployment, { projectId: up.project.id, status: 'live' });
  assert.ok(await reachable(target!), 'the release runs');
  // A static release of the local deployer is links into the blob store; its own blobs go with it.
  const sha = createHash('sha256').update('doomed').digest('hex');
  const blob = join(h.running.kernel.config.dataDir, 'blobs', sha.slice(0, 2), sha);
  if (target!.kind === 'static') assert.ok(existsSync(blob), 'the page is a blob');

  const res = await del(up.project.id);
  assert.is(res.status, 202, JSON.stringify(res.body));
  const op = await h.waitFor(token, res.body.operation.id);
  assert.is(op.status, 'succeeded');
  assert.not.ok(await reachable(target!), 'the release is stopped and removed');
  assert.not.ok(existsSync(blob), 'the blob only it used is removed');
  assert.is((await h.site(hostOf(up.project.url))).status, 404);
  assert.is(await em().count(Version, { projectId: up.project.id }), 0);
  assert.is(await objectsUnder(h.running.kernel, 'uploads/'), 0);
  assert.is(await objectsUnder(h.running.kernel, `logs/${up.operation.id}/`), 0, 'its stored build logs go');
  assert.is(await em().count(BuildLogChunk, { operationId: up.operation.id }), 0, 'its log lines go');
  assert.is((await h.get(token, `/api/v1/projects/${up.project.id}/`)).status, 404);
});

test('deleting a project while its deployment runs is refused with 409', async () => {
  const create = await fetch(`${h.api}/api/v1/projects/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'busy', settings: { build_command: 'sleep 3', output_directory: '.' } }),
  });
  const project = await create.json();
  const up = await (
    await h.upload(token, `/api/v1/projects/${project.id}/local-to-live`, await zipOf({ 'index.html': 'busy' }))
  ).json();
  const res = await del(project.id);
  assert.is(res.status, 409);
  assert.is(res.body.error.code, 'deployment_in_progress');
  assert.is(res.body.error.details.operation_id, up.operation.id);
  assert.is((await h.get(token, `/api/v1/projects/${project.id}/`)).status, 200);
  await h.waitFor(token, up.operation.id);
});

test.run();
