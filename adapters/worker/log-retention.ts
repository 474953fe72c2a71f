import { LOG_RETENTION } from '../../core/deployments/log-retention.js';
import type { Kernel } from '../kernel.js';
import { runPeriodically } from './periodic.js';

/** How often the worker moves old build-log lines out of the database. */
export const LOG_RETENTION_MS = 60 * 60_000;

/**
 * Starts the worker's periodic sweep of build-log lines (LogRetention.sweep: those of operations finished more
 * than buildLogLineDays ago): once at start, then every hour. Any number of workers may run it; what one moved,
 * another skips. Returns a function that stops it and waits for a round in progress.
 */
export function startLogRetention(kernel: Kernel, everyMs = LOG_RETENTION_MS): () => Promise<void> {
  const retention = kernel.get(LOG_RETENTION);
  return runPeriodically(
    async (stopped) => {
      const builds = await retention.sweep(stopped);
      if (builds) kernel.log.info({ builds }, "moved old build-log lines out of the database to the builds' logs");
    },
    everyMs,
    (err) => kernel.log.error({ err }, 'build-log line retention failed'),
  );
}
