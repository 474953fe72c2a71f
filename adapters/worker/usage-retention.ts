import { USAGE_SERVICE } from '../../core/usage/usage-service.js';
import type { Kernel } from '../kernel.js';
import { runPeriodically } from './periodic.js';

/** How often the worker removes usage hours older than USAGE_DAYS. */
export const USAGE_RETENTION_MS = 60 * 60_000;

/**
 * Starts the worker's periodic purge of old project usage (UsageService.purge): once at start, then every hour. Any
 * number of workers may run it. Returns a function that stops it and waits for a round in progress.
 */
export function startUsageRetention(kernel: Kernel, everyMs = USAGE_RETENTION_MS): () => Promise<void> {
  const usage = kernel.get(USAGE_SERVICE);
  return runPeriodically(
    async () => {
      const rows = await usage.purge();
      if (rows) kernel.log.info({ rows }, 'removed project usage older than its retention');
    },
    everyMs,
    (err) => kernel.log.error({ err }, 'project usage retention failed'),
  );
}
