// legs: db
// Stage claims are fenced: a worker whose claim lapsed cannot overwrite the newer claim's result,
// and a redelivered job of a finished stage does nothing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { OPERATION_STORE } from '../../../adapters/deployment-services.js';
import type { Kernel } from '../../../adapters/kernel.js';
import { Operation } from '../../../core/entities/operation.js';
import { Version } from '../../../core/entities/version.js';
import { OperationStore, type StageJob } from '../../../core/deployments/operation-store.js';
import { StageRunner, type StageImpl } from '../../../core/deployments/stage-runner.js';
import { type OperationState } from '../../../core/operations/state-machine.js';
import { CLOCK } from '../../../core/ports/clock.js';
import { QUEUE, type JobControl } from '../../../core/ports/queue.js';
import { deploymentRows } from '../../helpers/deployment-rows.js';
import { testKernel } from '../../helpers/kernel.js';

let kernel: Kernel;
test.before(async () => {
  kernel = await testKernel();
});
test.after(async () => kernel?.stop());

/** A running deployment whose Analyze is due, on real project and version rows. */
const operation = () => deploymentRows(kernel);

/** An Analyze that waits for `gate`, then writes who ran it, in the success transaction. */
function gatedAnalyze(who: string, gate: Promise<void>, abandoned: string[]): StageImpl {
  return {
    run: async (ctx) => {
      await Promise.race([
        gate,
        new Promise((_, reject) => {
          if (ctx.signal.aborted) reject(ctx.signal.reason);
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
        }),
      ]);
      return {
        also: async (tx) => void (await tx.nativeUpdate(Version, { id: ctx.version.id }, { analysis: { by: who } })),
      };
    },
    abandon: async () => void abandoned.push(who),
  };
}

/** The first delivery of the Analyze job of `operationId`. */
const analyzeJob = (operationId: string) => ({
  id: 'j',
  topic: 'stages',
  deliveries: 1,
  payload: { operationId, stage: 'analyze', attempt: 1 } as StageJob,
});
const control = (): JobControl => ({ heartbeat: async () => {}, signal: new AbortController().signal });
const stateOf = async (id: string) => {
  const op = await kernel.orm.em.fork().findOneOrFail(Operation, { id });
  return { state: op.state as unknown as OperationState, revision: op.revision };
};
const until = async (cond: () => Promise<boolean>, ms = 20_000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
};

test(
  "a late worker with an old token is refused; the newer claim's result stands; a " +
    'redelivery of the finished stage does nothing',
  async () => {
    const store = kernel.get<OperationStore>(OPERATION_STORE);
    const { op, version } = await operation();
    const job = analyzeJob(op.id);
    const abandoned: string[] = [];
    let openA!: () => void;
    let openB!: () => void;
    const gateA = new Promise<void>((r) => (openA = r));
    const gateB = new Promise<void>((r) => (openB = r));
    // A sends no heartbeat (a long pause); its 300 ms lease lapses and B claims the stage.
    const runner = (who: string, gate: Promise<void>, heartbeatMs: number) =>
      new StageRunner(
        kernel.orm.em,
        store,
        { analyze: gatedAnalyze(who, gate, abandoned) } as never,
        heartbeatMs,
        300,
        kernel.log,
      );
    const a = runner('A', gateA, 600_000).handle(job, control());
    await until(async () => (await stateOf(op.id)).state.stages.analyze.token === 1);
    const b = runner('B', gateB, 100).handle(job, control());
    await until(async () => (await stateOf(op.id)).state.stages.analyze.token === 2);

    openA();
    await a;
    const afterA = await stateOf(op.id);
    assert.equal(
      [afterA.state.stages.analyze.status, afterA.state.stages.analyze.token],
      ['running', 2],
      "A's success with token 1 was refused",
    );
    assert.is(
      (await kernel.orm.em.fork().findOneOrFail(Version, { id: version.id })).analysis,
      null,
      "A's result was not written",
    );
    assert.equal(abandoned, [], "A leaves the newer claim's work alone");

    openB();
    await b;
    const done = await stateOf(op.id);
    assert.equal([done.state.stages.analyze.status, done.state.stages.build.status], ['succeeded', 'queued']);
    assert.equal((await kernel.orm.em.fork().findOneOrFail(Version, { id: version.id })).analysis, { by: 'B' });

    // A late report of token 1 after B's success changes nothing either.
    const late = await store.apply(op.id, {
      type: 'stage_failed',
      stage: 'analyze',
      attempt: 1,
      token: 1,
      error: { code: 'analyze_late', message: 'late' },
    });
    assert.ok(late.t.noop);
    let ran = false;
    await new StageRunner(
      kernel.orm.em,
      store,
      { analyze: { run: async () => ((ran = true), {}) } } as never,
      100,
      300,
      kernel.log,
    ).handle({ ...job, deliveries: 2 }, control());
    assert.not.ok(ran, 'the redelivered job of a finished stage did not run it');
    assert.is((await stateOf(op.id)).revision, done.revision, 'nothing was written');
  },
);

test('a claim while the holder heartbeats waits, and takes over once the holder stops', async () => {
  const store = kernel.get<OperationStore>(OPERATION_STORE);
  const { op } = await operation();
  const job = analyzeJob(op.id);
  const abandoned: string[] = [];
  const stopA = new AbortController();
  let openB!: () => void;
  const gateB = new Promise<void>((r) => (openB = r));
  const a = new StageRunner(
    kernel.orm.em,
    store,
    { analyze: gatedAnalyze('A', new Promise(() => {}), abandoned) } as never,
    100,
    400,
    kernel.log,
  )
    .handle(job, { heartbeat: async () => {}, signal: stopA.signal })
    .catch((err: Error) => err);
  await until(async () => (await stateOf(op.id)).state.stages.analyze.token === 1);
  let beats = 0;
  const b = new StageRunner(
    kernel.orm.em,
    store,
    { analyze: gatedAnalyze('B', gateB, abandoned) } as never,
    100,
    400,
    kernel.log,
  ).handle(job, {
    heartbeat: async () => void beats++,
    signal: new AbortController().signal,
  });
  await until(async () => beats >= 8);
  assert.is((await stateOf(op.id)).state.stages.analyze.token, 1, 'B waited while A heartbeated');
  stopA.abort(); // A's worker stops and hands its claim back
  assert.instance(await a, Error);
  await until(async () => (await stateOf(op.id)).state.stages.analyze.token === 2);
  openB();
  await b;
  assert.is((await stateOf(op.id)).state.stages.analyze.status, 'succeeded');
});

test(
  'a worker that stops hands its claim back: the next claim takes the stage at ' + 'once, not after the lease',
  async () => {
    const store = kernel.get<OperationStore>(OPERATION_STORE);
    const { op } = await operation();
    const job = analyzeJob(op.id);
    const abandoned: string[] = [];
    const stopA = new AbortController();
    // A ten-minute lease: only the hand-back lets B in within this test.
    const a = new StageRunner(
      kernel.orm.em,
      store,
      { analyze: gatedAnalyze('A', new Promise(() => {}), abandoned) } as never,
      100,
      600_000,
      kernel.log,
    )
      .handle(job, { heartbeat: async () => {}, signal: stopA.signal })
      .catch((err: Error) => err);
    await until(async () => (await stateOf(op.id)).state.stages.analyze.token === 1);
    stopA.abort();
    assert.instance(await a, Error, "the stopping worker's job fails, so the queue redelivers it");
    const released = (await stateOf(op.id)).state.stages.analyze;
    assert.equal([released.status, released.released], ['running', true]);
    assert.equal(abandoned, [], 'a hand-back undoes nothing: the next worker runs the stage again');
    await new StageRunner(
      kernel.orm.em,
      store,
      { analyze: gatedAnalyze('B', Promise.resolve(), abandoned) } as never,
      100,
      600_000,
      kernel.log,
    ).handle({ ...job, deliveries: 2 }, control());
    const done = (await stateOf(op.id)).state.stages.analyze;
    assert.equal([done.status, done.token, done.released], ['succeeded', 2, undefined]);
  },
);

test('a store writes on the operation as it last wrote it; on what is stored once another process wrote', async () => {
  const store = kernel.get<OperationStore>(OPERATION_STORE);
  // Another process's store: the operation it writes moves on under this one's remembered copy.
  const other = new OperationStore(kernel.orm.em, kernel.get(QUEUE), kernel.get(CLOCK));
  const { op } = await operation();
  const claimed = await store.apply(op.id, { type: 'stage_started', stage: 'analyze', attempt: 1, leaseMs: 60_000 });
  const token = claimed.t.state.stages.analyze.token;
  const ours = { stage: 'analyze' as const, attempt: 1, token };
  // A heartbeat from elsewhere (a newer revision): this store's next write reads it instead of overwriting it.
  await other.apply(op.id, { type: 'heartbeat', ...ours });
  const beat = await stateOf(op.id);
  await store.apply(op.id, { type: 'stage_progress', ...ours, fraction: 0.5 });
  const after = await stateOf(op.id);
  assert.is(after.revision, beat.revision + 1);
  assert.is(after.state.stages.analyze.status, 'running');
  // A cancel from elsewhere: this store's success on its remembered copy is refused by what is stored.
  await other.apply(op.id, { type: 'cancel_requested' });
  const canceled = await stateOf(op.id);
  const late = await store.apply(op.id, { type: 'stage_succeeded', ...ours });
  assert.ok(late.t.noop, 'the success after a cancel wrote nothing');
  assert.equal(await stateOf(op.id), canceled);
  assert.is(canceled.state.status, 'canceled');
});

test.run();
