// legs: db
import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DRAIN_MS, ENDED_KEEP_MS, Retirement } from '../../../core/deployments/retirement.js';
import { Deployment } from '../../../core/entities/deployment.js';
import { Project } from '../../../core/entities/project.js';
import { DEPLOYER, type Deployer } from '../../../core/ports/deployer.js';
import type { Logger } from '../../../core/tokens.js';
import type { Kernel } from '../../../adapters/kernel.js';
import { testKernel } from '../../helpers/kernel.js';

let kernel: Kernel;
const now = new Date('2026-03-01T12:00:00.000Z');
const clock = { now: () => now };
const lines: { level: string; obj: object; msg: string }[] = [];
const log = {
  info: (obj: object, msg: string) => void lines.push({ level: 'info', obj, msg }),
  warn: (obj: object, msg: string) => void lines.push({ level: 'warn', obj, msg }),
} as unknown as Logger;

test.before(async () => {
  kernel = await testKernel({ deployer: 'local' });
});
test.after(async () => kernel?.stop());

/** The kernel's deployer (deployer-local, which can suspend and resume) with `extra` over it. */
const deployer = (extra: Partial<Deployer> = {}): Deployer => Object.assign(Object.create(kernel.get(DEPLOYER)), extra);

/** A deployment row of `status`, ended `endedMsAgo` before `now` (null: not ended). */
async function deployment(status: string, endedMsAgo: number | null, extra: Partial<Deployment> = {}): Promise<string> {
  const d = Object.assign(new Deployment(), {
    accountId: randomUUID(),
    projectId: randomUUID(),
    versionId: randomUUID(),
    buildId: randomUUID(),
    operationId: randomUUID(),
    status,
    createdAt: new Date(now.getTime() - 3_600_000),
    endedAt: endedMsAgo === null ? null : new Date(now.getTime() - endedMsAgo),
    ...extra,
  });
  await kernel.orm.em.fork().persist(d).flush();
  return d.id;
}

/** A project running a chain (`activeOperationId` set); returns its id. */
async function busyProject(): Promise<string> {
  const id = randomUUID();
  const name = `p-${id.slice(0, 8)}`;
  await kernel.orm.em.fork().insert(Project, {
    id,
    accountId: randomUUID(),
    name,
    slug: name,
    visibility: 'draft',
    settings: {},
    status: 'active',
    activeOperationId: randomUUID(),
    createdAt: now,
    updatedAt: now,
  } as never);
  return id;
}

const drained = DRAIN_MS + 1000;

test('drained releases of ended deployments stop: superseded and kept are suspended, the others removed', async () => {
  const kept = await deployment('superseded', drained);
  const pruned = await deployment('superseded', drained, { prunedAt: now });
  const canceled = await deployment('canceled', drained);
  const failed = await deployment('failed', drained);
  const expired = await deployment('expired', 3_600_000, { preview: true });
  const plan = await new Retirement(kernel.orm.em, deployer(), clock, log).plan([
    kept,
    pruned,
    canceled,
    failed,
    expired,
    kept,
  ]);
  assert.equal(plan.suspend, [kept]);
  assert.equal(plan.remove.sort(), [pruned, canceled, failed, expired].sort());
  assert.equal(plan.unknown, []);
});

test('nothing in flight, serving, still draining or of a project running a chain is touched', async () => {
  const running = await deployment('running', null);
  // A live release promoted again has its end cleared; one with an old end still serves.
  const live = await deployment('live', drained);
  const preview = await deployment('preview', null, { preview: true });
  const draining = await deployment('superseded', DRAIN_MS - 1000);
  const justEnded = await deployment('canceled', 0);
  const promoting = await deployment('superseded', drained, { projectId: await busyProject() });
  const plan = await new Retirement(kernel.orm.em, deployer(), clock, log).plan([
    running,
    live,
    preview,
    draining,
    justEnded,
    promoting,
  ]);
  assert.equal(plan, { suspend: [], remove: [], unknown: [] });
});

test('releases of deployments this database does not know are only named unknown', async () => {
  const stranger = randomUUID();
  const plan = await new Retirement(kernel.orm.em, deployer(), clock, log).plan([stranger, 'not-a-uuid', stranger]);
  assert.equal(plan, { suspend: [], remove: [], unknown: [stranger, 'not-a-uuid'] });
  assert.equal(await new Retirement(kernel.orm.em, deployer(), clock, log).plan([]), {
    suspend: [],
    remove: [],
    unknown: [],
  });
});

test('a deployer that cannot resume has a superseded release removed, not suspended', async () => {
  const superseded = await deployment('superseded', drained);
  const plan = await new Retirement(
    kernel.orm.em,
    deployer({ suspend: undefined, resume: undefined }),
    clock,
    log,
  ).plan([superseded]);
  assert.equal(plan, { suspend: [], remove: [superseded], unknown: [] });
});

test('reconcile stops what the plan says, counts a stop that fails, and names an unknown release once', async () => {
  const suspend = await deployment('superseded', drained);
  const remove = await deployment('canceled', drained);
  const broken = await deployment('failed', drained);
  const live = await deployment('live', null);
  const stranger = randomUUID();
  const calls: string[] = [];
  const d = deployer({
    runningReleases: async () => [suspend, remove, broken, live, stranger],
    suspend: async (id) => void calls.push(`suspend ${id}`),
    remove: async (id) => {
      if (id === broken) throw new Error('the engine said no');
      calls.push(`remove ${id}`);
    },
  });
  const retirement = new Retirement(kernel.orm.em, d, clock, log);
  lines.length = 0;
  assert.equal(await retirement.reconcile(), { running: 5, suspended: 1, removed: 1, failed: 1, unknown: 1 });
  assert.equal(calls, [`suspend ${suspend}`, `remove ${remove}`]);
  assert.equal(
    lines.map((l) => l.msg),
    [
      'releases of deployments this database does not know run: left alone',
      'a release that outlived its deployment was not stopped',
    ],
  );
  assert.equal(lines[0].obj, { deploymentIds: [stranger] });
  lines.length = 0;
  await retirement.reconcile();
  assert.equal(
    lines.map((l) => l.msg),
    ['a release that outlived its deployment was not stopped'],
    'the unknown release is named once',
  );
});

test('reconcile stops nothing when the deployer cannot say what runs, or has no runningReleases', async () => {
  const zero = { running: 0, suspended: 0, removed: 0, failed: 0, unknown: 0 };
  lines.length = 0;
  const failing = deployer({
    runningReleases: async () => {
      throw new Error('no engine');
    },
  });
  assert.equal(await new Retirement(kernel.orm.em, failing, clock, log).reconcile(), zero);
  assert.equal(
    lines.map((l) => [l.level, l.msg]),
    [['warn', 'the deployer did not say which releases it runs; none was retired']],
  );
  assert.equal(await new Retirement(kernel.orm.em, deployer(), clock, log).reconcile(), zero);
});

test('a release of a deployment finished a day ago is removed, running or not, once; newer ones stay', async () => {
  const day = ENDED_KEEP_MS + 60_000;
  const crashed = await deployment('failed', day);
  const canceled = await deployment('canceled', day);
  const expired = await deployment('expired', day, { preview: true });
  const recent = await deployment('failed', ENDED_KEEP_MS - 60_000);
  const superseded = await deployment('superseded', day);
  const pruned = await deployment('failed', day, { prunedAt: now });
  const removed: string[] = [];
  // No release runs: a crash loop's container is stopped, so only the sweep finds it.
  const d = deployer({ runningReleases: async () => [], remove: async (id) => void removed.push(id) });
  const retirement = new Retirement(kernel.orm.em, d, clock, log);
  const report = { running: 0, suspended: 0, removed: 0, failed: 0, unknown: 0 };
  await retirement.sweep(report);
  for (const id of [crashed, canceled, expired]) assert.ok(removed.includes(id), `removed ${id}`);
  for (const id of [recent, superseded, pruned]) assert.not.ok(removed.includes(id), `kept ${id}`);
  assert.ok(report.removed >= 3);
  const row = await kernel.orm.em.fork().findOneOrFail(Deployment, { id: crashed });
  assert.equal(row.prunedAt, now, 'marked pruned');
  removed.length = 0;
  await retirement.sweep(report);
  assert.not.ok(removed.includes(crashed), 'removed once');
});

test('a finished release the deployer fails to remove is skipped an hour, then tried again', async () => {
  const stuck = await deployment('failed', ENDED_KEEP_MS + 60_000);
  let tries = 0;
  const d = deployer({
    runningReleases: async () => [],
    remove: async (id) => {
      if (id === stuck && ++tries === 1) throw new Error('engine away');
    },
  });
  let at = now;
  const retirement = new Retirement(kernel.orm.em, d, { now: () => at }, log);
  const report = { running: 0, suspended: 0, removed: 0, failed: 0, unknown: 0 };
  await retirement.sweep(report);
  assert.ok(report.failed >= 1);
  assert.is((await kernel.orm.em.fork().findOneOrFail(Deployment, { id: stuck })).prunedAt, null);
  await retirement.sweep(report);
  assert.is(tries, 1, 'skipped for a while, so the others get their turn');
  at = new Date(now.getTime() + 3600_000 + 1000);
  await retirement.sweep(report);
  assert.is(tries, 2);
  assert.ok((await kernel.orm.em.fork().findOneOrFail(Deployment, { id: stuck })).prunedAt);
});

test("a project's live deployment that crashed keeps its release", async () => {
  const crashed = await deployment('failed', ENDED_KEEP_MS + 60_000);
  const row = await kernel.orm.em.fork().findOneOrFail(Deployment, { id: crashed });
  const name = `p-${crashed.slice(0, 8)}`;
  await kernel.orm.em.fork().insert(Project, {
    id: row.projectId,
    accountId: row.accountId,
    name,
    slug: name,
    visibility: 'draft',
    settings: {},
    status: 'active',
    liveDeploymentId: crashed,
    createdAt: now,
    updatedAt: now,
  } as never);
  const removed: string[] = [];
  const d = deployer({ remove: async (id) => void removed.push(id) });
  await new Retirement(kernel.orm.em, d, clock, log).sweep({
    running: 0,
    suspended: 0,
    removed: 0,
    failed: 0,
    unknown: 0,
  });
  assert.not.ok(removed.includes(crashed));
});

test.run();
