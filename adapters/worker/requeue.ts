import { RECOVERY } from '../../core/deployments/recovery.js';
import type { Kernel } from '../kernel.js';
import { runPeriodically } from './periodic.js';

/**
 * Starts the worker's periodic requeue (Recovery.requeue): every requeueSeconds, each deployment stage still queued
 * that long is enqueued again (the queue de-duplicates), so a stage whose enqueue failed while the queue was away runs
 * once it answers. Any number of workers may run it. Returns a function that stops it.
 */
export function startRequeue(kernel: Kernel): () => Promise<void> {
  const recovery = kernel.get(RECOVERY);
  const everyMs = kernel.config.requeueSeconds * 1000;
  return runPeriodically(
    async () => {
      const enqueued = await recovery.requeue(everyMs);
      if (enqueued) kernel.log.debug({ enqueued }, 'deployment stages still queued enqueued again');
    },
    everyMs,
    (err) => kernel.log.warn({ err }, 'enqueuing queued deployment stages again failed; the next round tries again'),
    { atOnce: false },
  );
}
