// legs: db
// A stage with nothing to run is done inline, in the claim of the stage before it: its writes commit with that
// stage's success or not at all, and when it declines it runs as a job of its own.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { OPERATION_STORE } from '../../../adapters/deployment-services.js';
import type { Kernel } from '../../../adapters/kernel.js';
import { Operation } from '../../../core/entities/operation.js';
import { Version } from '../../../core/entities/version.js';
import {
  STAGE_TOPIC,
  stageJobKey,
  type OperationStore,
  type StageJob,
} from '../../../core/deployments/operation-store.js';
import { StageRunner, type StageImpl, type StageResult } from '../../../core/deployments/stage-runner.js';
import type { OperationState, Stage } from '../../../core/operations/state-machine.js';
import { QUEUE, type JobControl, type Queue } from '../../../core/ports/queue.js';
import { deploymentRows } from '../../helpers/deployment-rows.js';
import { testKernel } from '../../helpers/kernel.js';

let kernel: Kernel;
test.before(async () => {
  kernel = await testKernel();
});
test.after(async () => kernel?.stop());

const control = (): JobControl => ({ heartbeat: async () => {}, signal: new AbortController().signal });
const analyzeJob = (operationId: string) => ({
  id: 'j',
  topic: STAGE_TOPIC,
  deliveries: 1,
  payload: { operationId, stage: 'analyze', attempt: 1 } as StageJob,
});
const stateOf = async (id: string) =>
  (await kernel.orm.em.fork().findOneOrFail(Operation, { id })).state as unknown as OperationState;
/** Whether the queue holds the job of `stage` (attempt 1) of the operation. */
const queued = async (operationId: string, stage: Stage) =>
  (await kernel.get<Queue>(QUEUE).position(STAGE_TOPIC, stageJobKey({ operationId, stage, attempt: 1 }))).state !==
  'gone';

/** An Analyze that records `analysis` in its success transaction, once `gate` opens. */
const analyze = (gate: Promise<void> = Promise.resolve()): StageImpl => ({
  run: async () => {
    await gate;
    return {
      also: async (tx, _t, op) => void (await tx.nativeUpdate(Version, { id: op.versionId! }, { analysis: { a: 1 } })),
    };
  },
});

/** A Build whose inline answer is `inline`, and what became of it: written in the transaction, run after it. */
function build(inline: (written: string[]) => Promise<StageResult | null>) {
  const written: string[] = [];
  const impl: StageImpl = { run: async () => ({}), inline: () => inline(written) };
  return { impl, written };
}

/** An inline Build that writes `build` into the version's options in the transaction, and notes `after`. */
const writesInTransaction = (written: string[]): Promise<StageResult> =>
  Promise.resolve({
    also: async (tx, _t, op) => {
      await tx.nativeUpdate(Version, { id: op.versionId! }, { options: { root_directory: 'inline' } });
      written.push('also');
    },
    after: async () => void written.push('after'),
  });

const runner = (stages: Partial<Record<Stage, StageImpl>>, heartbeatMs = 100) =>
  new StageRunner(
    kernel.orm.em,
    kernel.get<OperationStore>(OPERATION_STORE),
    stages as never,
    heartbeatMs,
    300,
    kernel.log,
  );

test('a stage done inline commits with the one before it: succeeded at once, the stage after it enqueued', async () => {
  const { op, version } = await deploymentRows(kernel);
  const b = build(writesInTransaction);
  await runner({ analyze: analyze(), build: b.impl }).handle(analyzeJob(op.id), control());
  const state = await stateOf(op.id);
  assert.equal(
    [state.stages.analyze.status, state.stages.build.status, state.current],
    ['succeeded', 'succeeded', 'deploy'],
  );
  const { startedAt, finishedAt, token } = state.stages.build;
  assert.equal([startedAt, finishedAt, token], [state.stages.analyze.finishedAt, state.stages.analyze.finishedAt, 1]);
  assert.equal(b.written, ['also', 'after']);
  const stored = await kernel.orm.em.fork().findOneOrFail(Version, { id: version.id });
  assert.equal([stored.analysis, stored.options], [{ a: 1 }, { root_directory: 'inline' }], 'both in one commit');
  assert.ok(await queued(op.id, 'deploy'), 'Deploy is enqueued');
  assert.not.ok(await queued(op.id, 'build'), 'the queue never carried Build');
});

test('a cancel before the commit leaves nothing of the stage done inline', async () => {
  const { op, version } = await deploymentRows(kernel);
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const b = build(writesInTransaction);
  // No heartbeat sees the cancel: Analyze ends its work, and its success finds the operation canceled.
  const running = runner({ analyze: analyze(gate), build: b.impl }, 600_000).handle(analyzeJob(op.id), control());
  const store = kernel.get<OperationStore>(OPERATION_STORE);
  while ((await stateOf(op.id)).stages.analyze.status !== 'running') await new Promise((r) => setTimeout(r, 20));
  await store.apply(op.id, { type: 'cancel_requested' });
  open();
  await running;
  const state = await stateOf(op.id);
  assert.equal(
    [state.status, state.stages.analyze.status, state.stages.build.status],
    ['canceled', 'canceled', 'canceled'],
  );
  assert.equal(b.written, [], 'neither its writes nor its work after the commit');
  const stored = await kernel.orm.em.fork().findOneOrFail(Version, { id: version.id });
  assert.equal([stored.analysis, stored.options], [null, {}]);
});

test('a stage that declines, or throws, runs as a job of its own', async () => {
  for (const inline of [async () => null, async () => Promise.reject(new Error('output missing'))]) {
    const { op, version } = await deploymentRows(kernel);
    const b = build(inline);
    await runner({ analyze: analyze(), build: b.impl }).handle(analyzeJob(op.id), control());
    const state = await stateOf(op.id);
    assert.equal(
      [state.stages.analyze.status, state.stages.build.status, state.current],
      ['succeeded', 'queued', 'build'],
    );
    assert.ok(await queued(op.id, 'build'), 'Build is enqueued');
    assert.equal((await kernel.orm.em.fork().findOneOrFail(Version, { id: version.id })).analysis, { a: 1 });
  }
});

test.run();
