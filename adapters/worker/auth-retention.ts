import { purgeAuthRecords } from '../../core/auth/auth-retention.js';
import { CLOCK } from '../../core/ports/clock.js';
import type { Kernel } from '../kernel.js';
import { runPeriodically } from './periodic.js';

/** How often the worker removes old sessions and agent grants. */
export const AUTH_RETENTION_MS = 60 * 60_000;

/**
 * Starts the worker's periodic purge of sessions and agent grants long revoked or expired (purgeAuthRecords): once at
 * start, then every hour. Any number of workers may run it. Returns a function that stops it and waits for a round.
 */
export function startAuthRetention(kernel: Kernel, everyMs = AUTH_RETENTION_MS): () => Promise<void> {
  return runPeriodically(
    async () => {
      const removed = await purgeAuthRecords(kernel.orm.em, kernel.get(CLOCK).now());
      if (removed.sessions || removed.grants) kernel.log.info(removed, 'removed sessions and agent grants long ended');
    },
    everyMs,
    (err) => kernel.log.error({ err }, 'session and agent grant retention failed'),
  );
}
