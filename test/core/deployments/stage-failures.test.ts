// legs: db
// How a stage's failure ends: a StageError or a filesystem error no redelivery gets past fails the
// operation at once (one delivery); any other error hands the claim back, so the queue's next
// delivery runs at once rather than waiting out the lease. The lease here is ten minutes: a
// delivery that waited for it would time these tests out. Stored messages are redacted.
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { OPERATION_STORE } from '../../../adapters/deployment-services.js';
import type { Kernel } from '../../../adapters/kernel.js';
import { STAGE_TOPIC, type OperationStore, type StageJob } from '../../../core/deployments/operation-store.js';
import { REDACTION, type Redaction } from '../../../core/deployments/redaction.js';
import {
  STAGE_MESSAGE_MAX,
  StageRunner,
  type StageContext,
  type StageImpl,
} from '../../../core/deployments/stage-runner.js';
import { Operation } from '../../../core/entities/operation.js';
import { ENVIRONMENT_SERVICE, type EnvironmentService } from '../../../core/environment/environment-service.js';
import { StageError } from '../../../core/errors.js';
import { type OperationState } from '../../../core/operations/state-machine.js';
import { QUEUE, type Queue } from '../../../core/ports/queue.js';
import { deploymentRows } from '../../helpers/deployment-rows.js';
import type { Logger } from '../../../core/tokens.js';
import { testKernel } from '../../helpers/kernel.js';

const LEASE_MS = 600_000;
let kernel: Kernel;
let stopConsuming: () => Promise<void>;
/** What Analyze does, per operation; every run is counted with its delivery. */
const behaviour = new Map<string, (ctx: StageContext) => Promise<void>>();
const runs = new Map<string, number>();
/** What the runner logged as warnings. */
const warnings: { obj: Record<string, unknown>; msg?: string }[] = [];

test.before(async () => {
  kernel = await testKernel({ queueVisibilitySeconds: LEASE_MS / 1000, queueMaxDeliveries: 3 });
  const store = kernel.get<OperationStore>(OPERATION_STORE);
  const analyze: StageImpl = {
    run: async (ctx) => {
      runs.set(ctx.operation.id, (runs.get(ctx.operation.id) ?? 0) + 1);
      await behaviour.get(ctx.operation.id)!(ctx);
      return {};
    },
  };
  const done: StageImpl = { run: async () => ({}) };
  const runner = new StageRunner(
    kernel.orm.em,
    store,
    { analyze, build: done, deploy: done },
    200,
    LEASE_MS,
    {
      debug: () => {},
      info: () => {},
      error: () => {},
      warn: (obj: object | string, msg?: string) =>
        void (typeof obj === 'object' && warnings.push({ obj: { ...obj }, msg })),
    } as Logger,
    kernel.get<Redaction>(REDACTION),
  );
  stopConsuming = await kernel
    .get<Queue>(QUEUE)
    .consume<StageJob>(STAGE_TOPIC, (job, control) => runner.handle(job, control), {
      concurrency: 2,
      onDead: (job, reason) => runner.fail(job as never, reason),
    });
});
test.after(async () => {
  await stopConsuming?.();
  await kernel?.stop();
});

/** A deployment on real rows whose Analyze does `fn`, enqueued once `setup` has run. */
async function deployment(
  fn: (ctx: StageContext) => Promise<void>,
  setup?: (projectId: string) => Promise<void>,
): Promise<string> {
  const { op, effects } = await deploymentRows(kernel);
  behaviour.set(op.id, fn);
  await setup?.(op.projectId!);
  await kernel.get<OperationStore>(OPERATION_STORE).carryOut(op, effects);
  return op.id;
}

async function terminal(id: string): Promise<OperationState> {
  const end = Date.now() + 30_000;
  for (;;) {
    const op = await kernel.orm.em.fork().findOneOrFail(Operation, { id });
    const state = op.state as unknown as OperationState;
    if (['succeeded', 'failed', 'canceled'].includes(state.status)) return state;
    if (Date.now() > end) throw new Error(`operation not terminal: ${JSON.stringify(state)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const dataDir = () => kernel.config.dataDir;
const systemError = (code: string, message: string) =>
  Object.assign(new Error(`${code}: ${message}`), { code, syscall: 'open', errno: -1 });

test(
  'a name too long for the filesystem fails the stage at once: one delivery, a ' + 'filesystem code, no server path',
  async () => {
    const id = await deployment(async () => {
      const dir = join(dataDir(), 'work', `analyze-${randomUUID()}-Ab12Cd`);
      mkdirSync(dir, { recursive: true });
      await open(join(dir, 'n'.repeat(256)), 'w'); // a real ENAMETOOLONG, naming the path
    });
    const state = await terminal(id);
    assert.is(state.status, 'failed');
    assert.is(state.stages.analyze.error!.code, 'analyze_filesystem_error');
    assert.match(state.stages.analyze.error!.message, 'ENAMETOOLONG');
    assert.match(state.stages.analyze.error!.message, `'<work>/${'n'.repeat(256)}'`);
    assert.not.ok(JSON.stringify(state).includes(dataDir()), JSON.stringify(state.error));
    assert.is(runs.get(id), 1, 'not delivered again');
    assert.equal([state.stages.build.status, state.stages.deploy.status], ['canceled', 'canceled']);
  },
);

test('a StageError fails at once with its message redacted: paths named neutrally', async () => {
  const id = await deployment(async () => {
    throw new StageError(
      'analyze_odd',
      `cannot read ${dataDir()}/work/analyze-1-x/src/a.txt beside ${dataDir()}/releases/r1/b.txt`,
    );
  });
  const state = await terminal(id);
  assert.equal(state.stages.analyze.error, {
    code: 'analyze_odd',
    message: 'cannot read <workspace>/a.txt beside <release>/b.txt',
  });
  assert.equal(state.error, state.stages.analyze.error);
  assert.is(runs.get(id), 1);
});

test(
  'a passing error (a dropped connection) hands the claim back: the next delivery ' + 'runs at once and succeeds',
  async () => {
    const id = await deployment(async (ctx) => {
      if (runs.get(ctx.operation.id) === 1) throw systemError('ECONNRESET', 'socket hang up');
    });
    const state = await terminal(id);
    assert.is(state.status, 'succeeded', JSON.stringify(state));
    assert.is(runs.get(id), 2);
    assert.is(state.stages.analyze.token, 2, 'the second delivery claimed the stage anew');
  },
);

test("an error that keeps coming ends after the queue's deliveries, promptly, with its reason redacted", async () => {
  const id = await deployment(async () => {
    throw systemError('EIO', `i/o error, read '${dataDir()}/storage/versions/abc.zip'`);
  });
  const state = await terminal(id);
  assert.is(state.status, 'failed');
  assert.is(state.stages.analyze.error!.code, 'analyze_internal_error');
  assert.match(
    state.stages.analyze.error!.message,
    `failed 3 times (EIO: i/o error, read '<data>/storage/versions/abc.zip')`,
  );
  assert.is(runs.get(id), 3);
  const logged = warnings.filter((w) => w.obj.operationId === id);
  assert.equal(
    logged.map((w) => [w.msg, w.obj.stage, w.obj.deliveries, w.obj.code, w.obj.reason]),
    [1, 2, 3].map((n) => [
      'a stage failed unexpectedly: the queue delivers it again',
      'analyze',
      n,
      'EIO',
      "EIO: i/o error, read '<data>/storage/versions/abc.zip'",
    ]),
    "each delivery's failure is logged for the operator, redacted",
  );
  assert.not.ok(JSON.stringify(logged).includes(dataDir()));
});

test("a StageError quoting a value of the operation's environment stores it masked", async () => {
  const secret = `sk_${randomUUID()}`;
  const environment = kernel.get<EnvironmentService>(ENVIRONMENT_SERVICE);
  const id = await deployment(
    async (ctx) => {
      const env = await environment.forBuild(ctx.operation.id, ctx.project.id, 'production');
      throw new StageError(
        'analyze_leaky',
        `the app printed token=${env.TOKEN} and ${Buffer.from(env.TOKEN).toString('base64')}`,
      );
    },
    (projectId) => environment.storeNew(projectId, [{ name: 'TOKEN', value: secret, scope: 'both', target: 'all' }]),
  );
  const state = await terminal(id);
  assert.is(state.stages.analyze.error!.message, 'the app printed token=*** and ***');
  assert.not.ok(JSON.stringify(state).includes(secret));
});

test('a very long stage error message (a deep host path) is stored cut, with a marker, after redaction', async () => {
  const secret = `sk_${randomUUID()}`;
  const environment = kernel.get<EnvironmentService>(ENVIRONMENT_SERVICE);
  const deep = `${dataDir()}/work/build-1-x/src/${'aaaaa/'.repeat(1400)}f`;
  const id = await deployment(
    async (ctx) => {
      const env = await environment.forBuild(ctx.operation.id, ctx.project.id, 'production');
      // The secret straddles the cap: redacted whole first, it cannot show in part.
      const pad = 'p'.repeat(STAGE_MESSAGE_MAX - 'token='.length - 10);
      throw new StageError('analyze_long', `token=${pad}${env.TOKEN} cannot write ${deep}`);
    },
    (projectId) => environment.storeNew(projectId, [{ name: 'TOKEN', value: secret, scope: 'both', target: 'all' }]),
  );
  const state = await terminal(id);
  const { message } = state.stages.analyze.error!;
  assert.ok(message.length < STAGE_MESSAGE_MAX + 50, String(message.length));
  assert.match(message, /… \[cut: \d+ characters in all\]$/);
  assert.not.ok(message.includes(secret.slice(0, 8)), message.slice(STAGE_MESSAGE_MAX - 40));
  assert.equal(state.error, state.stages.analyze.error);
});

test.run();
