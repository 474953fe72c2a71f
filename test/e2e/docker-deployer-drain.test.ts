// A redeploy on deployer-docker, then the process that switched stops before the replaced release drained
// (its 30 s timer lost): the next worker's Recovery stops the replaced container, and leaves the live one, a deploy
// in flight and a container of another Hoist sharing the engine running.
import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { RECOVERY } from '../../core/deployments/recovery.js';
import { releaseSpec } from '../../core/deployments/release-specs.js';
import { DRAIN_MS } from '../../core/deployments/retirement.js';
import { Deployment } from '../../core/entities/deployment.js';
import { ENVIRONMENT_SERVICE } from '../../core/environment/environment-service.js';
import { DEPLOYER, type ReleaseReports } from '../../core/ports/deployer.js';
import { dockerMissing, removeDockerProjects, testDocker } from '../helpers/docker.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

const missing = await dockerMissing();
if (missing) console.log(`! deployer=docker drain test skipped: ${missing}`);
else {
  let h: LiveHoist;
  const projects: string[] = [];
  const strays: string[] = [];
  test.before(async () => {
    h = await liveHoist({ deployer: 'docker', healthTimeoutSeconds: 60 });
  });
  test.after(async () => {
    const deployer = h?.running.kernel.get(DEPLOYER);
    for (const id of strays) await deployer?.remove(id).catch(() => {});
    await h?.close();
    await removeDockerProjects(projects);
  });

  /** Whether a container of the deployment runs on the engine. */
  const runs = async (deploymentId: string) =>
    (await testDocker().listContainers({ filters: { label: [`hoist.deployment=${deploymentId}`] } })).length > 0;

  test('a release whose drain timer was lost stops at the next start; live, in flight and unknown run on', async () => {
    const { token } = await h.login();
    const kernel = h.running.kernel;
    const first = await h.upload(token, '/api/v1/local-to-live', await zipOf({ 'index.html': 'one' }), {
      name: 'Drain Site',
    });
    const body = await first.json();
    assert.is(first.status, 202, JSON.stringify(body));
    const projectId = body.project.id as string;
    const host = hostOf(body.project.url);
    projects.push(projectId);
    assert.is((await h.waitFor(token, body.operation.id, undefined, 180_000)).status, 'succeeded');
    const replaced = (await h.site(host, '/')).headers['x-hoist-release'] as string;

    const again = await h.upload(
      token,
      `/api/v1/projects/${projectId}/local-to-live`,
      await zipOf({ 'index.html': 'two' }),
    );
    const op = await h.waitFor(token, (await again.json()).operation.id, undefined, 180_000);
    assert.is(op.status, 'succeeded', JSON.stringify(op));
    const switched = performance.now();
    const live = await h.site(host, '/');
    assert.is(live.body, 'two');
    assert.ok(await runs(replaced), 'the replaced release drains');

    // A deploy in flight (its deployment `running`) and a release of another Hoist on the same engine.
    const em = kernel.orm.em.fork();
    const row = await em.findOneOrFail(Deployment, { id: replaced });
    const spec = (await releaseSpec(em, row, kernel.get(ENVIRONMENT_SERVICE)))!;
    const { accountId, versionId, buildId, operationId, createdAt } = row;
    const inFlight = Object.assign(new Deployment(), {
      accountId,
      projectId,
      versionId,
      buildId,
      operationId,
      createdAt,
    });
    await em.persist(inFlight).flush();
    const stranger = randomUUID();
    strays.push(inFlight.id, stranger);
    const deployer = kernel.get(DEPLOYER);
    const control = { signal: new AbortController().signal, log: () => {}, report: {} as ReleaseReports };
    await deployer.prepare({ ...spec, deploymentId: inFlight.id }, control);
    await deployer.prepare({ ...spec, deploymentId: stranger }, control);

    // As if the switch were DRAIN_MS ago and its process had stopped then: the worker starting now recovers.
    await em.nativeUpdate(Deployment, { id: replaced }, { endedAt: new Date(Date.now() - DRAIN_MS - 1000) });
    const { retired } = await kernel.get(RECOVERY).resume();
    assert.ok(performance.now() - switched < DRAIN_MS - 5000, 'the drain timer has not fired yet');
    assert.is(retired.suspended + retired.removed, 1, JSON.stringify(retired));
    assert.is(retired.failed, 0);
    assert.ok(retired.unknown >= 1, JSON.stringify(retired));
    assert.not.ok(await runs(replaced), 'the replaced release is stopped');
    assert.is((await h.site(host, '/')).body, 'two');
    assert.ok(await runs(live.headers['x-hoist-release'] as string), 'the live release runs on');
    assert.ok(await runs(inFlight.id), 'the deploy in flight is untouched');
    assert.ok(await runs(stranger), 'the unknown release is untouched');
    const kept = (await em.fork().findOneOrFail(Deployment, { id: replaced })).prunedAt === null;
    assert.is(retired.suspended, kept ? 1 : 0, 'a release kept for a promote is suspended, not removed');
  });

  test.run();
}
