import { FILE_RETENTION } from '../../core/deployments/file-retention.js';
import type { Kernel } from '../kernel.js';
import { runPeriodically } from './periodic.js';

/** How often the worker removes the archives, artifacts and build logs deployments no longer need. */
export const FILE_RETENTION_MS = 60 * 60_000;

/**
 * Starts the worker's periodic sweep of what deployments keep in Storage (FileRetention.sweep: archives and
 * artifacts past deploymentFileDays, build logs past buildLogDays, unless a retained release or an unfinished
 * operation uses them): once at start, then every hour. Any number of workers may run it; what one removed, another
 * skips. Returns a function that stops it and waits for a round in progress.
 */
export function startFileRetention(kernel: Kernel, everyMs = FILE_RETENTION_MS): () => Promise<void> {
  const retention = kernel.get(FILE_RETENTION);
  return runPeriodically(
    async (stopped) => {
      const removed = await retention.sweep(stopped);
      if (removed.archives || removed.artifacts || removed.logs)
        kernel.log.info(removed, 'removed the archives, artifacts and build logs no retained release uses');
    },
    everyMs,
    (err) => kernel.log.error({ err }, 'deployment file retention failed'),
  );
}
