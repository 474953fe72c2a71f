// legs: db
// The webhook sweep on a real database: the tries it queues are taken in turns across accounts, so one account's
// backlog of due tries (endpoints that never answer) never keeps another account's retries out.
import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Kernel } from '../../../adapters/kernel.js';
import { Webhook, WebhookDelivery } from '../../../core/entities/webhook.js';
import type { Queue } from '../../../core/ports/queue.js';
import type { WebhookSender } from '../../../core/ports/webhook-sender.js';
import {
  SWEEP_MAX,
  SWEEP_PER_ACCOUNT,
  WebhookDeliveries,
  type WebhookJob,
} from '../../../core/webhooks/webhook-deliveries.js';
import { testKernel } from '../../helpers/kernel.js';

let kernel: Kernel;
test.before(async () => {
  kernel = await testKernel();
});
test.after(async () => kernel?.stop());

/** A webhook of a new account, and `n` deliveries of it due since `dueAt` (one a millisecond). */
async function backlog(n: number, dueAt: Date): Promise<{ accountId: string; ids: string[] }> {
  const em = kernel.orm.em.fork();
  const accountId = randomUUID();
  const projectId = randomUUID();
  const webhook = Object.assign(new Webhook(), {
    accountId,
    projectId,
    url: 'https://hooks.example.com/',
    events: ',deployment.succeeded,',
    secretSealed: 'sealed',
    createdAt: dueAt,
  });
  await em.insert(Webhook, webhook);
  const rows = Array.from({ length: n }, (_, i) => {
    const at = new Date(dueAt.getTime() + i);
    return Object.assign(new WebhookDelivery(), {
      webhookId: webhook.id,
      projectId,
      event: 'ping',
      attempts: 1,
      nextAttemptAt: at,
      createdAt: at,
      updatedAt: at,
    });
  });
  for (let at = 0; at < rows.length; at += 100) await em.insertMany(WebhookDelivery, rows.slice(at, at + 100));
  return { accountId, ids: rows.map((r) => r.id) };
}

test("one account's backlog of due tries never keeps another account's retry out of the sweep", async () => {
  const queued: WebhookJob[] = [];
  const queue = {
    enqueue: async (_topic: string, job: WebhookJob) => void queued.push(job),
  } as unknown as Queue;
  const deliveries = new WebhookDeliveries(
    kernel.orm.em,
    queue,
    { now: () => new Date() },
    {} as WebhookSender,
    { openSecret: async () => '' },
    { get: async () => null as never },
  );
  const now = Date.now();
  // Far more due tries than a sweep takes, all older than the other account's retry.
  const flood = await backlog(SWEEP_MAX + 100, new Date(now - 3_600_000));
  const other = await backlog(1, new Date(now - 1_000));
  const notDue = await backlog(1, new Date(now + 60_000));

  const n = await deliveries.sweep();
  const ids = queued.map((j) => j.deliveryId);
  assert.is(n, queued.length);
  assert.ok(ids.includes(other.ids[0]), "the other account's retry is queued");
  assert.equal(
    queued.find((j) => j.deliveryId === other.ids[0]),
    { deliveryId: other.ids[0], attempt: 2 },
  );
  assert.not.ok(ids.includes(notDue.ids[0]), 'a try not yet due is not queued');
  const flooded = ids.filter((id) => flood.ids.includes(id));
  assert.is(flooded.length, SWEEP_PER_ACCOUNT, 'one account gets its share of a sweep, no more');
  assert.equal(flooded, flood.ids.slice(0, SWEEP_PER_ACCOUNT), 'its oldest due first');
});

test.run();
