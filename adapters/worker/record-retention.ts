import { purgeAuthRecords } from '../../core/auth/auth-retention.js';
import { IDEMPOTENCY_SERVICE } from '../../core/idempotency/idempotency-service.js';
import { purgeFinishedDeletions } from '../../core/projects/project-deleter.js';
import { CLOCK } from '../../core/ports/clock.js';
import type { Kernel } from '../kernel.js';
import { runPeriodically } from './periodic.js';

/** How often the worker removes records nothing shows or uses any more. */
export const RECORD_RETENTION_MS = 60 * 60_000;

/**
 * Starts the worker's periodic purge of the rows each request leaves that nothing else would remove: sessions and
 * agent grants long revoked or expired (purgeAuthRecords), Idempotency-Keys past their 24 h, and the operations of
 * project deletions long finished (purgeFinishedDeletions). Once at start, then every hour; any number of workers may
 * run it. Returns a function that stops it and waits for a round.
 */
export function startRecordRetention(kernel: Kernel, everyMs = RECORD_RETENTION_MS): () => Promise<void> {
  return runPeriodically(
    async () => {
      const now = kernel.get(CLOCK).now();
      const removed = {
        ...(await purgeAuthRecords(kernel.orm.em, now)),
        idempotencyKeys: await kernel.get(IDEMPOTENCY_SERVICE).purge(),
        deletions: await purgeFinishedDeletions(kernel.orm.em, now),
      };
      if (Object.values(removed).some(Boolean)) kernel.log.info(removed, 'removed records long ended');
    },
    everyMs,
    (err) => kernel.log.error({ err }, 'record retention failed'),
  );
}
