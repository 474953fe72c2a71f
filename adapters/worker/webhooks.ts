import { WEBHOOK_DELIVERIES, WEBHOOK_TOPIC, type WebhookJob } from '../../core/webhooks/webhook-deliveries.js';
import { QUEUE, type Queue } from '../../core/ports/queue.js';
import type { Kernel } from '../kernel.js';
import { runPeriodically } from './periodic.js';

/** How often a worker queues the webhook tries that are due (one indexed query): a retry is at most this late. */
export const WEBHOOK_SWEEP_MS = 5_000;
/** Webhook tries one worker makes at once (each mostly waits on its endpoint); one account has at most 2 of them. */
const CONCURRENCY = 32;

/**
 * Starts the worker's webhook deliveries: takes delivery jobs from the queue, and sweeps at once and every
 * WEBHOOK_SWEEP_MS (the tries that are due: retries, and any that nothing queued; deliveries past their keeping).
 * Returns a function that stops both and waits for tries under way.
 */
export async function startWebhooks(kernel: Kernel, everyMs = WEBHOOK_SWEEP_MS): Promise<() => Promise<void>> {
  const deliveries = kernel.get(WEBHOOK_DELIVERIES);
  const stopConsuming = await kernel
    .get<Queue>(QUEUE)
    .consume<WebhookJob>(WEBHOOK_TOPIC, (job) => deliveries.deliver(job.payload), { concurrency: CONCURRENCY });
  const stopSweep = runPeriodically(
    async () => {
      const queued = await deliveries.sweep();
      if (queued) kernel.log.debug({ queued }, 'queued webhook tries that were due');
    },
    everyMs,
    (err) => kernel.log.error({ err }, 'webhook sweep failed'),
  );
  return async () => {
    await stopSweep();
    await stopConsuming();
  };
}
