// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Job } from '../../../core/ports/queue.js';
import { LocalQueue } from '../../../plugins/queue-local/local-queue.js';
import type { Kernel } from '../../../adapters/kernel.js';
import { testKernel } from '../../helpers/kernel.js';

// A poll interval no test waits for: every job below must be taken because an enqueue woke a slot.
const opts = { visibilityMs: 30_000, maxDeliveries: 3, pollMs: 60_000 };

let kernel: Kernel;
let queue: LocalQueue;
let n = 0;
const topic = () => `lq${process.pid}x${++n}`;
test.before(async () => {
  kernel = await testKernel();
  queue = new LocalQueue(kernel.orm.em, opts);
});
test.after(async () => {
  await queue?.stop();
  await kernel?.stop();
});

const waitFor = async (cond: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting (a job waited for the poll interval)');
    await new Promise((r) => setTimeout(r, 10));
  }
};
const idle = () => new Promise((r) => setTimeout(r, 100));

test('a burst of jobs on idle slots is handled at once, each job delivered once', async () => {
  const t = topic();
  const seen: Job[] = [];
  const stop = await queue.consume(
    t,
    async (job) => {
      seen.push(job);
      await new Promise((r) => setTimeout(r, 30));
    },
    { concurrency: 3 },
  );
  await idle();
  for (let i = 0; i < 6; i++) await queue.enqueue(t, { i }, { key: `${t}-${i}` });
  await waitFor(() => seen.length === 6);
  await stop();
  assert.equal(seen.map((j) => (j.payload as { i: number }).i).sort(), [0, 1, 2, 3, 4, 5]);
  assert.ok(seen.every((j) => j.deliveries === 1));
});

test('a job enqueued while a slot is looking (and finding nothing) is not left for the next poll', async () => {
  const t = topic();
  const seen: unknown[] = [];
  const internals = queue as unknown as { claim(topic: string): Promise<unknown> };
  const claim = internals.claim;
  let raced = false;
  // The enqueue lands after the slot's query came back empty, before it goes idle: no idle slot hears it.
  internals.claim = async function (this: unknown, at: string) {
    const claimed = await claim.call(this, at);
    if (at === t && !claimed && !raced) {
      raced = true;
      await queue.enqueue(t, { late: true }, { key: `${t}-late` });
    }
    return claimed;
  };
  try {
    const stop = await queue.consume(t, async (job) => void seen.push(job.payload), { concurrency: 1 });
    await waitFor(() => seen.length === 1);
    await stop();
  } finally {
    internals.claim = claim;
  }
  assert.ok(raced);
  assert.equal(seen, [{ late: true }]);
});

test('a job enqueued while every slot is busy is taken as soon as one is free', async () => {
  const t = topic();
  const seen: unknown[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const stop = await queue.consume(
    t,
    async (job) => {
      seen.push(job.payload);
      if ((job.payload as { first?: boolean }).first) await gate;
    },
    { concurrency: 1 },
  );
  await queue.enqueue(t, { first: true }, { key: `${t}-1` });
  await waitFor(() => seen.length === 1);
  await queue.enqueue(t, { second: true }, { key: `${t}-2` });
  release();
  await waitFor(() => seen.length === 2);
  await stop();
  assert.equal(seen, [{ first: true }, { second: true }]);
});

test('a consumer stopped while a slot is looking stops at once, not at the next poll', async () => {
  const t = topic();
  const internals = queue as unknown as { claim(topic: string): Promise<unknown> };
  const claim = internals.claim;
  let stopping: Promise<void> | undefined;
  let stop!: () => Promise<void>;
  // The stop lands while the slot's query is out: its abort event fires before the slot goes idle.
  internals.claim = async function (this: unknown, at: string) {
    const claimed = await claim.call(this, at);
    if (at === t && !stopping) stopping = stop();
    return claimed;
  };
  try {
    stop = await queue.consume(t, async () => {}, { concurrency: 1 });
    await waitFor(() => stopping !== undefined);
    let done = false;
    void stopping!.then(() => (done = true));
    await waitFor(() => done);
  } finally {
    internals.claim = claim;
  }
});

test(
  'a consumer that stops mid-work hands the job back: the next consumer takes it at ' +
    'once, not after the visibility timeout',
  async () => {
    const t = topic();
    const got: number[] = [];
    const stopA = await queue.consume(
      t,
      async (job, ctl) => {
        got.push(job.deliveries);
        await new Promise((r) => ctl.signal.addEventListener('abort', r, { once: true }));
        throw new Error('stopped');
      },
      { concurrency: 1 },
    );
    await queue.enqueue(t, {}, { key: `${t}-x` });
    await waitFor(() => got.length === 1);
    await stopA();
    const stopB = await queue.consume(t, async (job) => void got.push(job.deliveries), { concurrency: 1 });
    await waitFor(() => got.length === 2);
    await stopB();
    assert.equal(got, [1, 2]);
  },
);

test('an idle slot gets its job leased as written: no claim query, no other process claims it', async () => {
  const t = topic();
  const seen: Job[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const internals = queue as unknown as { claim(topic: string): Promise<unknown> };
  const claim = internals.claim;
  let claims = 0;
  internals.claim = async function (this: unknown, at: string) {
    if (at === t) claims++;
    return claim.call(this, at);
  };
  try {
    const stop = await queue.consume(
      t,
      async (job) => {
        seen.push(job);
        await gate;
      },
      { concurrency: 1 },
    );
    await idle();
    const before = claims;
    await queue.enqueue(t, { handed: true }, { key: `${t}-h` });
    await waitFor(() => seen.length === 1);
    assert.is(claims, before, 'handed over, not looked up');
    assert.is(seen[0].deliveries, 1);
    // Another process (its own queue on the same database) finds nothing to claim while the job runs.
    const other = new LocalQueue(kernel.orm.em, opts) as unknown as { claim(topic: string): Promise<unknown> };
    assert.is(await other.claim(t), null);
    release();
    await stop();
  } finally {
    internals.claim = claim;
  }
  const left = await kernel.orm.em
    .fork()
    .getConnection()
    .execute('select count(*) as n from jobs where topic = ?', [t]);
  assert.is(Number(left[0].n), 0, 'done and deleted');
});

test.run();
