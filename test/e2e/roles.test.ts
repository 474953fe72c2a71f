// The roles as separate processes on PostgreSQL + NATS JetStream: `hoist api`, `hoist edge` and two
// `hoist worker`s sharing one stream. Stages are shared between the workers and none runs twice; a
// redelivered job of a finished stage does nothing; a worker killed mid-build hands its stage to the
// other one, and the operation ends succeeded.
import http from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Build } from '../../core/entities/build.js';
import { Operation } from '../../core/entities/operation.js';
import { STAGE_TOPIC, type StageJob } from '../../core/deployments/operation-store.js';
import type { OperationState } from '../../core/operations/state-machine.js';
import { QUEUE, type Queue } from '../../core/ports/queue.js';
import { gatedProject, type GatedProject } from '../helpers/gated-build.js';
import { cluster, killQuietly, processesOf, until, type Cluster, type RoleProcess } from '../helpers/roles.js';

let c: Cluster;
let api: RoleProcess;
let edge: RoleProcess;
let workers: RoleProcess[];
let token: string;
const orphans: number[] = [];

test.before(async () => {
  c = await cluster({
    // A lease that outlasts a worker stalled a few seconds by a loaded machine (two cores running the whole
    // suite): a lapse hands a running stage to the other worker, which is right, but is not this test's case. With
    // 5 s, one CI run saw Analyze claimed twice (its heartbeats wait on each other's database write).
    HOIST_QUEUE_VISIBILITY_SECONDS: '10',
    HOIST_STUCK_AFTER_SECONDS: '2',
    HOIST_WORKER_CONCURRENCY: '2',
    // One account fills every slot here (account-share.test.ts keeps one for others).
    HOIST_RESERVED_WORKER_SLOTS: '0',
  });
  [api, edge, ...workers] = await Promise.all([c.start('api'), c.start('edge'), c.start('worker'), c.start('worker')]);
  token = await c.login(api.url);
});
test.after(async () => c?.close(orphans));

const op = async (id: string) =>
  (await fetch(`${api.url}/api/v1/operations/${id}`, { headers: { authorization: `Bearer ${token}` } })).json();
const finished = async (id: string) => ['succeeded', 'failed', 'canceled'].includes((await op(id)).status);
const workerPids = () => workers.map((w) => w.child.pid!);
const gated = (name: string) => gatedProject({ api: api.url, dataDir: c.dataDir }, token, name);
const deploy = async (p: GatedProject, marker: string): Promise<string> => {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(await p.zip(marker))]), 'site.zip');
  const res = await fetch(`${api.url}/api/v1/projects/${p.id}/local-to-live`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: form,
  });
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  return body.operation.id;
};
const site = (slug: string) =>
  new Promise<string>((resolve, reject) => {
    const url = new URL(edge.url);
    http
      .get(
        { host: url.hostname, port: url.port, path: '/', headers: { host: `${slug}.localhost:${url.port}` } },
        (res) => {
          let body = '';
          res.on('data', (d) => (body += d)).on('end', () => resolve(body));
        },
      )
      .on('error', reject);
  });
const stateOf = async (id: string) =>
  (await c.kernel.orm.em.fork().findOneOrFail(Operation, { id })).state as unknown as OperationState;
const buildsOf = (operationId: string) =>
  c.kernel.orm.em.fork().find(Build, { operationId }, { orderBy: { createdAt: 'asc' } });
/** Stages each worker finished, from its own /metrics. */
const stagesRun = async (w: RoleProcess) => {
  const text = await (await fetch(`${w.url}/metrics`)).text();
  return [...text.matchAll(/^hoist_stage_duration_seconds_count\{[^}]*\} (\d+)/gm)].reduce(
    (sum, m) => sum + Number(m[1]),
    0,
  );
};

test('two workers on one stream take stages from each other; no stage runs twice', async () => {
  const projects = await Promise.all(['share-a', 'share-b', 'share-c', 'share-d'].map(gated));
  const ops = await Promise.all(projects.map((p) => deploy(p, `hello ${p.name}`)));
  // Four builds wait at once: with two slots per worker, each worker runs two of them.
  const building = () => projects.flatMap((p) => processesOf(p.command, workerPids()));
  await until(() => building().length === 4, 'four builds running');
  const holders = building().map((p) => p.ancestor);
  assert.equal(holders.filter((h) => h === workerPids()[0]).length, 2, 'the first worker runs two builds');
  assert.equal(holders.filter((h) => h === workerPids()[1]).length, 2, 'the second worker runs two builds');
  for (const p of projects) p.open();
  for (const id of ops)
    await until(
      () => finished(id),
      async () => `operation ${id} finished: ${JSON.stringify((await op(id)).stages)}`,
    );
  for (const [i, id] of ops.entries()) {
    const view = await op(id);
    assert.is(view.status, 'succeeded', JSON.stringify(view));
    const state = await stateOf(id);
    assert.equal(
      [state.stages.analyze.token, state.stages.build.token, state.stages.deploy.token],
      [1, 1, 1],
      'each stage was claimed once',
    );
    assert.equal(
      (await buildsOf(id)).map((b) => b.status),
      ['succeeded'],
      'one build ran',
    );
    // The edge process learns of the switch on the change feed, moments after the commit the API shows.
    const name = projects[i].name;
    await until(async () => (await site(name)) === `hello ${name}`, `the edge process serving ${name}`, 10_000);
  }
  const [a, b] = await Promise.all(workers.map(stagesRun));
  assert.is(a + b, 12, `every stage ran once in all (${a} + ${b})`);
  assert.ok(a >= 2 && b >= 2, `both workers ran stages (${a}, ${b})`);
});

test('a redelivered job of a finished stage is acknowledged and changes nothing', async () => {
  const p = await gated('again');
  p.open();
  const id = await deploy(p, 'again');
  await until(
    () => finished(id),
    async () => `deployment finished: ${JSON.stringify((await op(id)).stages)}`,
  );
  const queue = c.kernel.get<Queue>(QUEUE);
  const drained = async () =>
    JSON.stringify(await queue.depth!(STAGE_TOPIC)) === JSON.stringify({ waiting: 0, running: 0 });
  // The operation shows succeeded at its commit; its last job is counted (and acknowledged) once the worker's
  // work after the commit is done too.
  await until(drained, "the deployment's jobs acknowledged");
  const before = await c.kernel.orm.em.fork().findOneOrFail(Operation, { id });
  const ranBefore = (await Promise.all(workers.map(stagesRun))).reduce((x, y) => x + y);
  // The same stage and attempt under another key, as a redelivery after the de-duplication window would be.
  for (const stage of ['analyze', 'build', 'deploy'] as const) {
    await queue.enqueue<StageJob>(STAGE_TOPIC, { operationId: id, stage, attempt: 1 }, { key: `again-${stage}` });
  }
  await until(
    async () => (await Promise.all(workers.map(stagesRun))).reduce((x, y) => x + y) === ranBefore + 3,
    'the three jobs handled',
  );
  await until(drained, 'the jobs acknowledged');
  const after = await c.kernel.orm.em.fork().findOneOrFail(Operation, { id });
  assert.is(after.revision, before.revision, 'the operation was not written');
  assert.equal((await buildsOf(id)).length, 1, 'no build ran again');
});

test('kill -9 of a worker mid-build: the other worker takes the stage over and the operation succeeds', async () => {
  const p = await gated('killed');
  const id = await deploy(p, 'survived');
  await until(() => processesOf(p.command, workerPids()).length === 1, 'the build running');
  const [{ pid: build, ancestor }] = processesOf(p.command, workerPids());
  const victim = workers.find((w) => w.child.pid === ancestor)!;
  const survivor = workers.find((w) => w !== victim)!;
  victim.child.kill('SIGKILL');
  await new Promise((r) => victim.child.once('exit', r));
  killQuietly(build); // the dead worker's build process would otherwise wait for the gate forever
  orphans.push(build);
  await until(async () => (await stateOf(id)).stages.build.token === 2, 'the build claimed again after the ack wait');
  await until(
    () => processesOf(p.command, [survivor.child.pid!]).some((x) => x.ancestor === survivor.child.pid),
    'the survivor building',
  );
  p.open();
  await until(() => finished(id), 'deployment finished');
  const view = await op(id);
  assert.is(view.status, 'succeeded', JSON.stringify(view));
  assert.is(view.attempt, 1, 'no retry was needed');
  assert.equal(
    (await buildsOf(id)).map((b) => b.status),
    ['canceled', 'succeeded'],
    "the dead worker's build was superseded",
  );
  // The edge is another process: the switch reaches it on the change feed, moments after the commit the API shows.
  await until(async () => (await site('killed')) === 'survived', 'the edge serving the release', 10_000);
});

test.run();
