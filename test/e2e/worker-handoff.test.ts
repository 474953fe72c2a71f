// A worker stopped gracefully (SIGTERM) mid-build releases its stage claim and hands the job back:
// the other worker takes the build over at once, not after the visibility timeout (two minutes here),
// and the operation ends succeeded. Roles as separate processes on PostgreSQL + NATS JetStream.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Build } from '../../core/entities/build.js';
import { Operation } from '../../core/entities/operation.js';
import type { OperationState } from '../../core/operations/state-machine.js';
import { gatedProject } from '../helpers/gated-build.js';
import { cluster, processesOf, until, type Cluster, type RoleProcess } from '../helpers/roles.js';

let c: Cluster;
let api: RoleProcess;
let workers: RoleProcess[];
let token: string;

test.before(async () => {
  c = await cluster({ HOIST_QUEUE_VISIBILITY_SECONDS: '120' });
  [api, ...workers] = await Promise.all([c.start('api'), c.start('worker'), c.start('worker')]);
  token = await c.login(api.url);
});
test.after(async () => c?.close());

const stateOf = async (id: string) =>
  (await c.kernel.orm.em.fork().findOneOrFail(Operation, { id })).state as unknown as OperationState;

test('SIGTERM of a worker mid-build: it exits cleanly and the other worker takes the build over at once', async () => {
  const p = await gatedProject({ api: api.url, dataDir: c.dataDir }, token, 'handed-over');
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(await p.zip('handed over'))]), 'site.zip');
  const res = await fetch(`${api.url}/api/v1/projects/${p.id}/local-to-live`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: form,
  });
  const { operation } = await res.json();
  const pids = () => workers.map((w) => w.child.pid!);
  await until(() => processesOf(p.command, pids()).length === 1, 'the build running', 30_000);
  const [{ ancestor }] = processesOf(p.command, pids());
  const leaving = workers.find((w) => w.child.pid === ancestor)!;
  const staying = workers.find((w) => w !== leaving)!;

  leaving.child.kill('SIGTERM');
  const code = await new Promise((r) => leaving.child.once('exit', r));
  assert.is(code, 0, leaving.output());
  assert.is(processesOf(p.command, [leaving.child.pid!]).length, 0, 'its build process ended with it');
  // Well within the two-minute visibility timeout: only the hand-back lets the other worker in.
  await until(
    async () => (await stateOf(operation.id)).stages.build.token === 2,
    () => `the build claimed again; the workers said:\n${leaving.output()}\n${staying.output()}`,
    30_000,
  );
  await until(() => processesOf(p.command, [staying.child.pid!]).length === 1, 'the other worker building', 30_000);
  p.open();
  await until(async () => (await stateOf(operation.id)).status !== 'running', 'the deployment finished', 60_000);
  const state = await stateOf(operation.id);
  assert.equal([state.status, state.attempt], ['succeeded', 1]);
  const builds = await c.kernel.orm.em
    .fork()
    .find(Build, { operationId: operation.id }, { orderBy: { createdAt: 'asc' } });
  assert.equal(
    builds.map((b) => b.status),
    ['canceled', 'succeeded'],
    "the stopped worker's build was superseded",
  );
});

test.run();
