import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { JobRejection, type Job, type Queue } from '../../core/ports/queue.js';

/** A queue plugin under test, and how to make a second consumer of the same backend. */
export interface QueueFixture {
  queue: Queue;
  /** Another Queue instance on the same backend (another process, for NATS), if the plugin has one. */
  peer?: Queue;
  /** The deliveries the plugin was configured with. */
  maxDeliveries: number;
  cleanup(): Promise<void>;
}

const waitFor = async (cond: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
};

const until = async (cond: () => Promise<boolean>, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
};

/** The Queue contract: every queue plugin must pass it. Topics are unique per test. */
export function queueContract(name: string, make: () => Promise<QueueFixture>) {
  let f: QueueFixture;
  let n = 0;
  const topic = () => `t${process.pid}x${++n}`;
  test.before(async () => {
    f = await make();
  });
  test.after(async () => f?.cleanup());

  test(`${name}: a job is delivered once and acknowledged`, async () => {
    const t = topic();
    const seen: Job[] = [];
    const stop = await f.queue.consume(t, async (job) => void seen.push(job), { concurrency: 2 });
    await f.queue.enqueue(t, { hello: 'world' }, { key: `${t}-a` });
    await waitFor(() => seen.length === 1);
    await new Promise((r) => setTimeout(r, 200));
    await stop();
    assert.is(seen.length, 1);
    assert.equal(seen[0].payload, { hello: 'world' });
    assert.is(seen[0].deliveries, 1);
    assert.is((await f.queue.position(t, `${t}-a`)).state, 'gone');
  });

  test(`${name}: the same key while waiting is enqueued once`, async () => {
    const t = topic();
    await f.queue.enqueue(t, { i: 1 }, { key: `${t}-k` });
    await f.queue.enqueue(t, { i: 2 }, { key: `${t}-k` });
    const seen: unknown[] = [];
    const stop = await f.queue.consume(t, async (job) => void seen.push(job.payload), { concurrency: 1 });
    await waitFor(() => seen.length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    await stop();
    assert.equal(seen, [{ i: 1 }]);
  });

  test(`${name}: a failing job is redelivered, then succeeds`, async () => {
    const t = topic();
    const deliveries: number[] = [];
    const stop = await f.queue.consume(
      t,
      async (job) => {
        deliveries.push(job.deliveries);
        if (job.deliveries < 2) throw new Error('transient');
      },
      { concurrency: 1 },
    );
    await f.queue.enqueue(t, {}, { key: `${t}-r` });
    await waitFor(() => deliveries.length === 2);
    await stop();
    assert.equal(deliveries, [1, 2]);
  });

  test(`${name}: a dropped job goes to onDead and is not redelivered`, async () => {
    const t = topic();
    let calls = 0;
    const dead: string[] = [];
    const stop = await f.queue.consume(
      t,
      async () => {
        calls++;
        throw new JobRejection('bad input', 'drop');
      },
      { concurrency: 1, onDead: async (_job, reason) => void dead.push(reason) },
    );
    await f.queue.enqueue(t, {}, { key: `${t}-d` });
    await waitFor(() => dead.length === 1);
    await new Promise((r) => setTimeout(r, 300));
    await stop();
    assert.is(calls, 1);
    assert.equal(dead, ['bad input']);
  });

  test(`${name}: position counts the jobs ahead`, async () => {
    const t = topic();
    const keys = ['a', 'b', 'c'].map((k) => `${t}-${k}`);
    for (const k of keys) await f.queue.enqueue(t, {}, { key: k });
    // Jobs enqueued within the same millisecond may stand in either order; the three places are taken once each.
    const places = await Promise.all(keys.map((k) => f.queue.position(t, k)));
    assert.equal(
      places.map((p) => p.state),
      ['waiting', 'waiting', 'waiting'],
    );
    assert.equal(places.map((p) => p.jobsAhead).sort(), [0, 1, 2]);
    assert.equal(await f.queue.position(t, `${t}-never`), { jobsAhead: 0, state: 'gone', workers: 0 });
    const ran: string[] = [];
    const stop = await f.queue.consume(t, async (job) => void ran.push(job.id), { concurrency: 1 });
    await waitFor(() => ran.length === 3);
    await stop();
    for (const k of keys) await until(async () => (await f.queue.position(t, k)).state === 'gone');
  });

  test(`${name}: a job failing every time goes to onDead after maxDeliveries, and no more`, async () => {
    const t = topic();
    const deliveries: number[] = [];
    const dead: Job[] = [];
    const stop = await f.queue.consume(
      t,
      async (job) => {
        deliveries.push(job.deliveries);
        throw new Error(`failure ${job.deliveries}`);
      },
      { concurrency: 1, onDead: async (job) => void dead.push(job) },
    );
    await f.queue.enqueue(t, { x: 1 }, { key: `${t}-m` });
    await waitFor(() => dead.length === 1, 20_000);
    await new Promise((r) => setTimeout(r, 300));
    await stop();
    assert.equal(
      deliveries,
      Array.from({ length: f.maxDeliveries }, (_, i) => i + 1),
    );
    assert.equal([dead[0].payload, dead[0].deliveries], [{ x: 1 }, f.maxDeliveries]);
    await until(async () => (await f.queue.position(t, `${t}-m`)).state === 'gone');
  });

  test(`${name}: the workers consuming a topic are counted while they run`, async () => {
    const t = topic();
    const stops = [
      await f.queue.consume(t, async () => {}, { concurrency: 2 }),
      await f.queue.consume(t, async () => {}, { concurrency: 3 }),
    ];
    const running = await f.queue.position(t, `${t}-never`);
    const slots = await f.queue.workers(t);
    for (const s of stops) await s();
    assert.is(running.workers, 5);
    assert.is(slots, 5);
    assert.is((await f.queue.position(t, `${t}-never`)).workers, 0);
    assert.is(await f.queue.workers(t), 0);
  });

  test(`${name}: jobs are shared between consumers with no job run twice`, async () => {
    const t = topic();
    const runs = new Map<string, number>();
    const handler = async (job: Job<{ i: number }>) => {
      runs.set(String(job.payload.i), (runs.get(String(job.payload.i)) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 5));
    };
    const stops = [
      await f.queue.consume(t, handler, { concurrency: 3 }),
      await (f.peer ?? f.queue).consume(t, handler, { concurrency: 3 }),
    ];
    for (let i = 0; i < 40; i++) await f.queue.enqueue(t, { i }, { key: `${t}-${i}` });
    await waitFor(() => runs.size === 40);
    await new Promise((r) => setTimeout(r, 300));
    for (const s of stops) await s();
    assert.is(runs.size, 40);
    assert.ok(
      [...runs.values()].every((v) => v === 1),
      'a job ran twice',
    );
  });

  test(`${name}: a job whose consumer stopped mid-work is redelivered to another`, async () => {
    const t = topic();
    let first = true;
    const got: number[] = [];
    const stopA = await f.queue.consume(
      t,
      async (job, ctl) => {
        got.push(job.deliveries);
        if (first) {
          first = false;
          await new Promise((r) => ctl.signal.addEventListener('abort', r, { once: true }));
          throw new Error('stopped');
        }
      },
      { concurrency: 1 },
    );
    await f.queue.enqueue(t, {}, { key: `${t}-x` });
    await waitFor(() => got.length === 1);
    await stopA();
    const stopB = await (f.peer ?? f.queue).consume(t, async (job) => void got.push(job.deliveries), {
      concurrency: 1,
    });
    await waitFor(() => got.length === 2, 20_000);
    await stopB();
    assert.equal(got, [1, 2]);
  });
}
