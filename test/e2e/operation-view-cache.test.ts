// legs: db
// The API keeps a finished operation's view (answerCacheSeconds: an hour here, so nothing expires during a test):
// a write behind Hoist's back is not seen, and every write Hoist makes that changes the view is, from the next
// request on: a later deploy going live, the live release failing, a retry, the project's deletion.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { RELEASE_REPORTS } from '../../core/deployments/release-reports.js';
import { Deployment } from '../../core/entities/deployment.js';
import { Operation } from '../../core/entities/operation.js';
import type { ReleaseReports } from '../../core/ports/deployer.js';
import { liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
test.before(async () => {
  h = await liveHoist({ answerCacheSeconds: 3600 });
  ({ token } = await h.login());
});
test.after(async () => h?.close());

const em = () => h.running.kernel.orm.em.fork();
const view = async (opId: string) => {
  const res = await h.get(token, `/api/v1/operations/${opId}`);
  assert.is(res.status, 200, JSON.stringify(res.body));
  return res.body;
};
const deploy = async (path: string, fields: Record<string, string>, files: Record<string, string>) => {
  const res = await h.upload(token, path, await zipOf(files), fields);
  const answer = await res.json();
  assert.is(res.status, 202, JSON.stringify(answer));
  return { opId: answer.operation.id as string, projectId: answer.project.id as string };
};

test('kept until a write changes it: a later deploy, the live release failing', async () => {
  const first = await deploy('/api/v1/local-to-live', { name: 'kept-view' }, { 'index.html': 'one' });
  assert.is((await h.waitFor(token, first.opId)).status, 'succeeded');
  assert.is((await view(first.opId)).result.live, true);
  await em().nativeUpdate(Operation, { id: first.opId }, { progress: 42 });
  assert.is((await view(first.opId)).progress, 100, 'a write behind its back: the kept view');

  const second = await deploy(`/api/v1/projects/${first.projectId}/local-to-live`, {}, { 'index.html': 'two' });
  assert.is((await h.waitFor(token, second.opId)).status, 'succeeded');
  const superseded = await view(first.opId);
  assert.is(superseded.result.live, false, 'the next release went live');
  assert.is(superseded.progress, 42, 'read again');

  const live = await view(second.opId);
  assert.is(live.result.live, true);
  const { id } = await em().findOneOrFail(Deployment, { operationId: second.opId });
  await h.running.kernel.get<ReleaseReports>(RELEASE_REPORTS).failed(id, 'gone');
  assert.equal((await view(second.opId)).result, {
    url: null,
    deployment_id: null,
    build_id: live.result.build_id,
    live: false,
  });
});

test('a failed deployment gives way to its retry at once', async () => {
  const res = await fetch(`${h.api}/api/v1/projects/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'kept-failure', settings: { build_command: 'exit 3', output_directory: 'dist' } }),
  });
  const project = await res.json();
  assert.is(res.status, 201, JSON.stringify(project));
  const { opId } = await deploy(`/api/v1/projects/${project.id}/local-to-live`, {}, { 'index.html': 'x' });
  assert.is((await h.waitFor(token, opId)).status, 'failed');
  assert.is((await view(opId)).attempt, 1);
  const retried = await h.post(token, `/api/v1/operations/${opId}/retry`);
  assert.is(retried.status, 202, JSON.stringify(retried.body));
  const after = await view(opId);
  assert.is(after.attempt, 2, JSON.stringify(after));
  assert.is((await h.waitFor(token, opId)).status, 'failed');
});

test("a deleted project's operations are 404 once the deletion is done", async () => {
  const { opId, projectId } = await deploy('/api/v1/local-to-live', { name: 'kept-deleted' }, { 'index.html': 'x' });
  assert.is((await h.waitFor(token, opId)).status, 'succeeded');
  await view(opId);
  const del = await fetch(`${h.api}/api/v1/projects/${projectId}/`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${token}` },
  });
  const deletion = await del.json();
  assert.is(del.status, 202, JSON.stringify(deletion));
  assert.is((await h.waitFor(token, deletion.operation.id)).status, 'succeeded');
  const gone = await h.get(token, `/api/v1/operations/${opId}`);
  assert.is(gone.status, 404, JSON.stringify(gone.body));
});

test.run();
