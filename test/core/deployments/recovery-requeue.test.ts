// legs: db
// Recovery.requeue: at a worker's start every unfinished deployment's current stage is enqueued again; every
// requeueSeconds, only a stage still queued in an operation quiet that long (its enqueue was lost while the queue was
// away). The queue de-duplicates (its contract suite).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Kernel } from '../../../adapters/kernel.js';
import { STAGE_TOPIC, stageJobKey } from '../../../core/deployments/operation-store.js';
import { RECOVERY } from '../../../core/deployments/recovery.js';
import { Operation } from '../../../core/entities/operation.js';
import type { OperationState } from '../../../core/operations/state-machine.js';
import { QUEUE, type Queue } from '../../../core/ports/queue.js';
import { deploymentRows } from '../../helpers/deployment-rows.js';
import { testKernel } from '../../helpers/kernel.js';

let kernel: Kernel;
test.before(async () => {
  kernel = await testKernel();
});
test.after(async () => kernel?.stop());

/** Whether the queue holds the job of the operation's Analyze (attempt 1). */
const enqueued = async (operationId: string) =>
  (await kernel.get<Queue>(QUEUE).position(STAGE_TOPIC, stageJobKey({ operationId, stage: 'analyze', attempt: 1 })))
    .state !== 'gone';

/** A running deployment whose Analyze (never enqueued) is `status`, last written `agoMs` ago. */
async function deployment(status: 'queued' | 'running', agoMs: number): Promise<string> {
  const { op } = await deploymentRows(kernel);
  const state = op.state as unknown as OperationState;
  state.stages.analyze.status = status;
  const at = new Date(Date.now() - agoMs);
  await kernel.orm.em.fork().nativeUpdate(Operation, { id: op.id }, { state: state as never, updatedAt: at });
  return op.id;
}

test('a stage queued as long as requeueSeconds is enqueued again; a younger one or a running one is not', async () => {
  const quiet = await deployment('queued', 60_000);
  const young = await deployment('queued', 0);
  const running = await deployment('running', 60_000);
  const recovery = kernel.get(RECOVERY);
  assert.ok((await recovery.requeue(30_000)) >= 1);
  assert.ok(await enqueued(quiet), 'the quiet queued stage is enqueued');
  assert.not.ok(await enqueued(young), 'a stage just committed is left to its own enqueue');
  assert.not.ok(await enqueued(running), 'a running stage has its job: the queue redelivers it if need be');
  // At a worker's start, every unfinished deployment's current stage, running or not.
  await recovery.requeue();
  assert.ok(await enqueued(young));
  assert.ok(await enqueued(running));
});

test.run();
