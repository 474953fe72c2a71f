import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { KernelError } from '../../../adapters/kernel.js';
import type { Job } from '../../../core/ports/queue.js';
import { NatsQueue } from '../../../plugins/queue-nats/nats-queue.js';
import { dropStream, freePort, natsUrl, uniqueStream } from '../../helpers/nats.js';
import { testKernel } from '../../helpers/kernel.js';

const stream = uniqueStream();
const queues: NatsQueue[] = [];
const make = async (ackWaitMs = 1000, maxDeliveries = 2) => {
  const q = new NatsQueue({ url: natsUrl, stream, consumer: 'workers', ackWaitMs, maxDeliveries });
  await q.start();
  queues.push(q);
  return q;
};
const until = async (cond: () => boolean | Promise<boolean>, ms = 20_000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
};

test.after(async () => {
  for (const q of queues) await q.stop();
  await dropStream(natsUrl, stream);
});

test('the kernel refuses to start when NATS is unreachable, naming the plugin', async () => {
  const port = await freePort();
  try {
    await testKernel({ queue: 'nats', natsUrl: `nats://127.0.0.1:${port}` });
    assert.unreachable('booted without NATS');
  } catch (err) {
    assert.instance(err, KernelError);
    assert.match((err as Error).message, /plugin queue-nats failed to start/);
  }
});

test(
  'in-progress acks keep a long job with its worker; without them it is redelivered ' + 'after the ack wait',
  async () => {
    const q = await make(1000);
    const deliveries: number[] = [];
    let release!: () => void;
    const stop = await q.consume(
      'beats',
      async (job, ctl) => {
        deliveries.push(job.deliveries);
        if (job.deliveries > 1) return;
        const timer = setInterval(() => void ctl.heartbeat(), 300);
        await new Promise<void>((r) => (release = r));
        clearInterval(timer);
        // The second half goes silent for longer than the ack wait: the job comes back.
        await new Promise((r) => setTimeout(r, 2500));
      },
      { concurrency: 2 },
    );
    await q.enqueue('beats', {}, { key: 'b1' });
    await until(() => deliveries.length === 1);
    await new Promise((r) => setTimeout(r, 2500));
    assert.equal(deliveries, [1], 'heartbeats kept the job for 2.5 s with a 1 s ack wait');
    release();
    await until(() => deliveries.length === 2);
    await stop();
    assert.equal(deliveries, [1, 2]);
  },
);

test('a job whose worker goes silent on its last delivery fails through onDead (max-deliveries advisory)', async () => {
  const q = await make(800, 2);
  const dead: { job: Job; reason: string }[] = [];
  const seen: number[] = [];
  const stop = await q.consume(
    'silent',
    async (job, ctl) => {
      seen.push(job.deliveries);
      await new Promise((r) => ctl.signal.addEventListener('abort', r, { once: true }));
    },
    { concurrency: 3, onDead: async (job, reason) => void dead.push({ job, reason }) },
  );
  await q.enqueue('silent', { n: 7 }, { key: 's1' });
  await until(() => dead.length === 1);
  assert.equal(seen, [1, 2]);
  assert.equal(
    [dead[0].job.payload, dead[0].job.deliveries, dead[0].reason],
    [{ n: 7 }, 2, 'its worker stopped answering'],
  );
  await until(async () => (await q.position('silent', 's1')).state === 'gone');
  await stop();
});

test('workers are counted across processes and drop out when they stop', async () => {
  const [a, b] = [await make(), await make()];
  const stopA = await a.consume('count', async () => {}, { concurrency: 2 });
  const stopB = await b.consume('count', async () => {}, { concurrency: 3 });
  assert.is((await a.position('count', 'none')).workers, 5);
  await stopB();
  assert.is((await a.position('count', 'none')).workers, 2);
  await stopA();
});

test('publishing the same key twice stores one message; depth reads the consumer', async () => {
  const q = await make();
  await q.enqueue('dup', { i: 1 }, { key: 'same' });
  await q.enqueue('dup', { i: 2 }, { key: 'same' });
  await q.enqueue('dup', { i: 3 }, { key: 'other' });
  assert.equal(await q.depth('dup'), { waiting: 2, running: 0 });
  assert.equal(await q.position('dup', 'other'), { jobsAhead: 1, state: 'waiting', workers: 0 });
});

test('a topic that is not a subject token, and a delayed job, are refused', async () => {
  const q = await make();
  try {
    await q.enqueue('a.b', {});
    assert.unreachable();
  } catch (err) {
    assert.match((err as Error).message, /topic "a\.b" must match/);
  }
  try {
    await q.enqueue('later', {}, { delayMs: 1000 });
    assert.unreachable();
  } catch (err) {
    assert.match((err as Error).message, /delayMs/);
  }
});

test.run();
