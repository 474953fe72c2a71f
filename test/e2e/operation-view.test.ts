// legs: db
import { RequestContext } from '@mikro-orm/core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { analysisView } from '../../core/deployments/analysis-view.js';
import { Build } from '../../core/entities/build.js';
import { OPERATION_VIEWS, type OperationViews } from '../../core/deployments/operation-views.js';
import { Deployment } from '../../core/entities/deployment.js';
import { Operation } from '../../core/entities/operation.js';
import { Version } from '../../core/entities/version.js';
import { liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
test.before(async () => {
  h = await liveHoist();
  ({ token } = await h.login());
});
test.after(async () => h?.close());

const deploy = async (path: string, fields: Record<string, string>, body: string) => {
  const res = await h.upload(token, path, await zipOf({ 'index.html': body }), fields);
  assert.is(res.status, 202);
  const answer = await res.json();
  const op = await h.waitFor(token, answer.operation.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  return { op, projectId: answer.project.id as string };
};
const records = (opId: string) =>
  RequestContext.create(h.running.kernel.orm.em.fork(), async () => {
    const em = h.running.kernel.orm.em;
    const build = await em.findOneOrFail(Build, { operationId: opId });
    const deployment = await em.findOneOrFail(Deployment, { operationId: opId });
    const version = await em.findOneOrFail(Version, { id: build.versionId });
    return { build, deployment, version };
  });

test('a finished operation shows its analysis, build log and release; live follows the project', async () => {
  const first = await deploy('/api/v1/local-to-live', { name: 'viewed-site' }, 'one');
  const r1 = await records(first.op.id);
  assert.is(first.op.stages.analyze.result.runtime, 'static');
  assert.equal(first.op.stages.analyze.result, analysisView(r1.version.analysis!));
  assert.equal(first.op.build_log, {
    build_id: r1.build.id,
    last_lines: r1.build.log.lastLines.slice(-20),
    warnings: r1.build.log.warnings,
    errors: r1.build.log.errors,
    bytes: r1.build.log.bytes,
    full_log: `/api/v1/projects/${first.projectId}/builds/${r1.build.id}/log`,
  });
  assert.ok(first.op.build_log.last_lines.length > 0);
  assert.equal(first.op.result, {
    url: r1.deployment.url,
    deployment_id: r1.deployment.id,
    build_id: r1.build.id,
    live: true,
  });

  const second = await deploy(`/api/v1/projects/${first.projectId}/local-to-live`, {}, 'two');
  const r2 = await records(second.op.id);
  assert.is(second.op.result.live, true);
  assert.is(second.op.result.deployment_id, r2.deployment.id);
  const again = await h.get(token, `/api/v1/operations/${first.op.id}`);
  assert.is(again.status, 200);
  assert.equal(
    again.body.result,
    { url: r1.deployment.url, deployment_id: r1.deployment.id, build_id: r1.build.id, live: false },
    'the superseded release is no longer live',
  );
  const { result: _a, updated_at: _b, ...rest } = again.body;
  const { result: _c, updated_at: _d, ...before } = first.op;
  assert.equal(rest, before, 'the rest of the view is unchanged');
});

test('GET answers exactly the view of the operation loaded as an entity', async () => {
  const { op } = await deploy('/api/v1/local-to-live', { name: 'entity-view-site' }, 'three');
  const got = await h.get(token, `/api/v1/operations/${op.id}`);
  const kernel = h.running.kernel;
  const expected = await RequestContext.create(kernel.orm.em.fork(), async () =>
    kernel.get<OperationViews>(OPERATION_VIEWS).view(await kernel.orm.em.findOneOrFail(Operation, { id: op.id })),
  );
  assert.equal(got.body, JSON.parse(JSON.stringify(expected)));
});

test('an unknown or malformed operation id is 404', async () => {
  for (const id of ['00000000-0000-4000-8000-000000000000', 'nope']) {
    const res = await h.get(token, `/api/v1/operations/${id}`);
    assert.is(res.status, 404);
    assert.is(res.body.error.code, 'not_found');
  }
});

test.run();
