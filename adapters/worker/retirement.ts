import { RETIREMENT, type RetirementReport } from '../../core/deployments/retirement.js';
import type { Logger } from '../../core/tokens.js';
import type { Kernel } from '../kernel.js';
import { runPeriodically } from './periodic.js';

/** How often the worker stops the releases that outlived their deployment (Retirement.reconcile and sweep). */
export const RETIREMENT_MS = 5 * 60_000;

/** Logs what a round of retirement did, when it stopped or failed to stop something. */
export function logRetired(log: Logger, { running, suspended, removed, failed }: RetirementReport): void {
  if (suspended || removed || failed)
    log.info({ running, suspended, removed, failed }, 'stopped releases still running after their deployment ended');
}

/**
 * Starts the worker's periodic retirement of releases still running after their deployment ended (a drain
 * timer lost with a process, a retirement that failed), and of finished ones a day old (Retirement.sweep): every 5
 * minutes, the first round 5 minutes from now (Recovery ran one as the worker started). Any number of workers may run
 * it. Returns a function that stops it.
 */
export function startRetirement(kernel: Kernel, everyMs = RETIREMENT_MS): () => Promise<void> {
  const retirement = kernel.get(RETIREMENT);
  return runPeriodically(
    async () => {
      const report = await retirement.reconcile();
      await retirement.sweep(report);
      logRetired(kernel.log, report);
    },
    everyMs,
    (err) => kernel.log.error({ err }, 'retirement of ended releases failed'),
    { atOnce: false },
  );
}
