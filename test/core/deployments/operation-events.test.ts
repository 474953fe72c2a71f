// legs: db
import type { EntityManager } from '@mikro-orm/core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Kernel } from '../../../adapters/kernel.js';
import { LOG_CHUNKS, OPERATIONS_CHANNEL, type LogChunks } from '../../../core/deployments/log-chunks.js';
import { OperationEvents, type StreamEvent } from '../../../core/deployments/operation-events.js';
import { OperationViews } from '../../../core/deployments/operation-views.js';
import { Build } from '../../../core/entities/build.js';
import { Operation } from '../../../core/entities/operation.js';
import type { OperationState } from '../../../core/operations/state-machine.js';
import { CHANGE_FEED } from '../../../core/ports/change-feed.js';
import { CLOCK } from '../../../core/ports/clock.js';
import { QUEUE } from '../../../core/ports/queue.js';
import { CONFIG } from '../../../core/tokens.js';
import { deploymentRows } from '../../helpers/deployment-rows.js';
import { testKernel } from '../../helpers/kernel.js';
import { until } from '../../helpers/roles.js';

let kernel: Kernel;
test.before(async () => {
  kernel = await testKernel();
});
const streams: { abort: AbortController; ended: Promise<unknown> }[] = [];
test.after(async () => {
  // A stream a failed test left open ends before the database goes.
  for (const s of streams) s.abort.abort();
  await Promise.allSettled(streams.map((s) => s.ended));
  await kernel?.stop();
});

const em = () => kernel.orm.em.fork();

/**
 * An event stream of a deployment on real rows, its log reads counted, and what moves the operation as the state
 * machine would: `move` changes its state (a new revision) and announces it as OperationStore does.
 */
async function streamOf() {
  const { op } = await deploymentRows(kernel);
  const chunks = kernel.get(LOG_CHUNKS);
  let reads = 0;
  const counted: Pick<LogChunks, 'after' | 'afterInBuild'> = {
    after: (id, from) => (reads++, chunks.after(id, from)),
    afterInBuild: (id, from) => chunks.afterInBuild(id, from),
  };
  const changes = kernel.get(CHANGE_FEED);
  const views = (m: EntityManager) => new OperationViews(m, kernel.get(QUEUE), kernel.get(CLOCK), kernel.get(CONFIG));
  // A long poll: only the announcements wake the stream.
  const events = new OperationEvents(kernel.orm.em, views, counted, changes, 60_000);
  const seen: StreamEvent[] = [];
  const abort = new AbortController();
  const ended = (async () => {
    for await (const e of events.operation(op.accountId, op.id, { revision: -1, line: 0 }, abort.signal)) seen.push(e);
  })();
  streams.push({ abort, ended });
  let revision = op.revision;
  const state = structuredClone(op.state) as unknown as OperationState;
  const move = async (change: (s: OperationState) => void, also?: (tx: EntityManager) => Promise<void>) => {
    change(state);
    const status = state.status;
    await em().transactional(async (tx) => {
      await tx.nativeUpdate(Operation, { id: op.id }, { state: state as never, status, revision: ++revision });
      await also?.(tx);
    });
    await changes.publish(OPERATIONS_CHANNEL, op.id);
    await until(() => seen.some((e) => e.event === 'state' && e.data.stages && revisionOf(e) === revision), 'state');
  };
  const build = Object.assign(new Build(), {
    accountId: op.accountId,
    projectId: op.projectId!,
    versionId: op.versionId!,
    operationId: op.id,
    status: 'running',
    logKey: `logs/${op.id}/build-1.log`,
    createdAt: new Date(),
  });
  await em().persist(build).flush();
  const writer = chunks.writer(op.id, build.id);
  const lines = () => seen.flatMap((e) => (e.event === 'log' ? e.data.lines : []));
  return { op, move, reads: () => reads, writer, build, lines, seen, ended };
}

const revisionOf = (e: StreamEvent) => Number(e.id.split('.')[0]);

test('an event stream reads the build log only while the build can still add lines', async () => {
  const s = await streamOf();
  await until(() => s.seen.length > 0, 'first state');
  assert.is(s.reads(), 1, 'the first read');

  // Analyze starts and moves: the build is queued, as it was when the first read found nothing.
  await s.move((st) => Object.assign(st.stages.analyze, { status: 'running' }));
  await s.move((st) => Object.assign(st.stages.analyze, { progress: 50 }));
  assert.is(s.reads(), 1, 'the build still queued: no read');

  // The build runs: every wake reads.
  await s.move((st) => {
    Object.assign(st.stages.analyze, { status: 'succeeded' });
    Object.assign(st.stages.build, { status: 'running' });
  });
  await s.writer.append(['one', 'two']);
  await until(() => s.lines().length === 2, 'the first lines');
  await s.move((st) => Object.assign(st.stages.build, { progress: 50 }));
  const running = s.reads();
  assert.ok(running >= 5, `reads while it runs: ${running}`);

  // Its last line is written before its success is: the wake of the success reads it.
  await s.writer.append(['three']);
  await s.move((st) => Object.assign(st.stages.build, { status: 'succeeded' }));
  await until(() => s.lines().length === 3, 'the last line');
  const settled = s.reads();

  // Deploy starts, moves and ends: the build is as it was, nothing more is read.
  await s.move((st) => Object.assign(st.stages.deploy, { status: 'running' }));
  await s.move((st) => Object.assign(st.stages.deploy, { progress: 90 }));
  assert.ok(s.reads() <= settled + 1, `at most the read that found nothing new: ${s.reads()} after ${settled}`);
  const quiet = s.reads();
  await s.move((st) => Object.assign(st.stages.deploy, { progress: 95 }));
  assert.is(s.reads(), quiet, 'no read once the build is done and read');
  await s.move((st) => {
    Object.assign(st.stages.deploy, { status: 'succeeded' });
    st.status = 'succeeded';
  });
  await s.ended;
  assert.is(s.reads(), quiet, 'none for the end either');
  assert.equal(s.lines(), ['one', 'two', 'three'], 'every line once');
  assert.is(s.seen.at(-1)!.event, 'state', 'the final state last');
});

test('lines written with the build stage leaving queued (done inline), and those of a retry, are read', async () => {
  const s = await streamOf();
  await until(() => s.seen.length > 0, 'first state');
  await s.move((st) => Object.assign(st.stages.analyze, { status: 'running' }));
  await s.move((st) => Object.assign(st.stages.analyze, { progress: 50 }));
  const queued = s.reads();
  // Analyze's success records the build it did inline with its lines, in one transaction.
  await s.move(
    (st) => {
      Object.assign(st.stages.analyze, { status: 'succeeded' });
      Object.assign(st.stages.build, { status: 'succeeded' });
    },
    (tx) => kernel.get(LOG_CHUNKS).appendWithin(tx, s.op.id, s.build.id, ['inline']),
  );
  await until(() => s.lines().length === 1, 'the inline line');
  assert.ok(s.reads() > queued);

  // A failed deploy, then a retry: the build runs again, in attempt 2.
  await s.move((st) => Object.assign(st.stages.deploy, { status: 'failed' }));
  const failed = s.reads();
  await s.move((st) => {
    st.attempt = 2;
    Object.assign(st.stages.build, { status: 'queued' });
    Object.assign(st.stages.deploy, { status: 'queued' });
  });
  assert.ok(s.reads() > failed, 'a new attempt is read');
  await s.move((st) => Object.assign(st.stages.build, { status: 'running' }));
  await s.writer.append(['again']);
  await until(() => s.lines().length === 2, 'the line of the retry');
  await s.move((st) => {
    Object.assign(st.stages.build, { status: 'succeeded' });
    Object.assign(st.stages.deploy, { status: 'succeeded' });
    st.status = 'succeeded';
  });
  await s.ended;
  assert.equal(s.lines(), ['inline', 'again']);
});

test.run();
