// DeployStage alone, on fakes of its ports and repositories: which build it ships, how the route
// switches in the success transaction, and what it takes down when a release never went live.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { StageContext } from '../../../../core/deployments/stage-runner.js';
import { DeployStage } from '../../../../core/deployments/stages/deploy.js';
import { StageError } from '../../../../core/errors.js';
import type { Deployer, ReleaseSpec } from '../../../../core/ports/deployer.js';
import { FakeBuilds, FakeDeployments, fakeLog, stageContext } from './fakes.js';

const config = { appsScheme: 'http', appsDomain: 'apps.test', appsPort: undefined, edgePort: 8080 };

/** A deployer that makes every release ready at once, and records what it was asked. */
function fakeDeployer() {
  const prepared: ReleaseSpec[] = [];
  const removed: string[] = [];
  const deployer: Deployer = {
    prepare: async (spec) => (prepared.push(spec), { kind: 'static', root: `/releases/${spec.deploymentId}` }),
    remove: async (id) => void removed.push(id),
    restore: async () => {},
  };
  return { deployer, prepared, removed };
}

function setup() {
  const builds = new FakeBuilds();
  const deployments = new FakeDeployments();
  const { deployer, prepared, removed } = fakeDeployer();
  const environment = { forRuntime: async () => ({ GREETING: 'hello' }) };
  const reports = { targetChanged: async () => {}, exited: async () => {}, failed: async () => {} };
  const stage = new DeployStage(deployer, reports, builds, deployments, environment, config as never, fakeLog());
  return { builds, deployments, prepared, removed, stage };
}

const builtFor = async (builds: FakeBuilds, ctx: StageContext, status = 'succeeded') => {
  const id = await builds.started(ctx);
  await builds.update(id, { status, artifactKey: `artifacts/${id}.zip` });
  return id;
};

test("ships the operation's build; the route switches on success, superseding the live one", async () => {
  const { builds, deployments, prepared, stage } = setup();
  const ctx = stageContext();
  const build = await builtFor(builds, ctx);
  const before = await deployments.create({
    accountId: ctx.operation.accountId,
    projectId: ctx.project.id,
    versionId: ctx.version.id,
    buildId: build,
    operationId: 'an-earlier-operation',
  });
  deployments.live.set(ctx.project.id, before);

  const result = await stage.run(ctx);
  assert.is(prepared.length, 1);
  assert.is(prepared[0].artifactKey, `artifacts/${build}.zip`);
  assert.equal(prepared[0].env, {}, 'a static release runs nothing: it gets no variable');
  assert.is(prepared[0].slug, 'site');
  const made = deployments.byId(prepared[0].deploymentId);
  assert.is(made.status, 'running', 'not live before the stage succeeds');
  assert.is(made.buildId, build);
  assert.is(deployments.live.get(ctx.project.id), before);

  await result.also!(null as never);
  assert.is(made.status, 'live');
  assert.is(made.url, 'http://site.apps.test:8080/');
  assert.equal(made.target, { kind: 'static', root: `/releases/${made.id}` });
  assert.is(deployments.byId(before).status, 'superseded');
  assert.is(deployments.live.get(ctx.project.id), made.id);
});

test('a Node.js release gets the variables of its runtime scope', async () => {
  const { builds, prepared, stage } = setup();
  const ctx = stageContext({ analysis: { runtime: 'node', startCommand: 'node server.js' } });
  await builtFor(builds, ctx);
  await stage.run(ctx);
  assert.equal(prepared[0].env, { GREETING: 'hello' });
});

test('a redeploy ships the build its state names, and fails when that build has no artifact any more', async () => {
  const { builds, prepared, stage } = setup();
  const first = stageContext();
  const kept = await builtFor(builds, first);
  const redeploy = stageContext({ buildId: kept });
  redeploy.project = first.project;
  await stage.run(redeploy);
  assert.is(prepared[0].artifactKey, `artifacts/${kept}.zip`);

  const gone = stageContext({ buildId: kept });
  const err = await stage.run(gone).catch((e: unknown) => e);
  assert.instance(err, StageError);
  assert.is((err as StageError).code, 'deploy_build_missing', 'another project cannot ship it');
});

test('an operation with no build to ship fails the stage (Build packs even a skip_build upload)', async () => {
  const { builds, prepared, stage } = setup();
  const ctx = stageContext();
  await builtFor(builds, ctx, 'running');
  const err = await stage.run(ctx).catch((e: unknown) => e);
  assert.instance(err, StageError);
  assert.is((err as StageError).code, 'deploy_no_build');
  assert.is(prepared.length, 0);
});

test('abandon takes down and cancels the releases prepared that never went live; a rerun does it first', async () => {
  const { builds, deployments, removed, stage } = setup();
  const ctx = stageContext();
  await builtFor(builds, ctx);
  await stage.run(ctx);
  const [first] = await deployments.running(ctx.operation.id);
  await stage.run(ctx);
  assert.equal(removed, [first], 'the second run took the first release down');
  assert.is(deployments.byId(first).status, 'canceled');
  const [second] = await deployments.running(ctx.operation.id);
  await stage.abandon(ctx);
  assert.equal(removed, [first, second]);
  assert.equal(await deployments.running(ctx.operation.id), []);
});

test.run();
