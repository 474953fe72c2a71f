import { DOMAIN_CHECKER, type DomainChecker } from '../../core/domains/domain-checker.js';
import type { Kernel } from '../kernel.js';
import { runPeriodically } from './periodic.js';

const BATCH = 20;

/**
 * Starts the worker's customer-domain checks: every domainSchedulerSeconds it checks the domains
 * that are due (DomainChecker.checkDue claims each one, so any number of workers can run this).
 * Returns a function that stops it and waits for a round in progress.
 */
export function startDomainChecks(kernel: Kernel): () => Promise<void> {
  const checker = kernel.get<DomainChecker>(DOMAIN_CHECKER);
  return runPeriodically(
    async (stopped) => {
      // A full batch means more may be due: go on at once rather than wait for the next tick.
      while (!stopped() && (await checker.checkDue(BATCH)) === BATCH);
    },
    kernel.config.domainSchedulerSeconds * 1000,
    (err) => kernel.log.error({ err }, 'customer domain checks failed'),
  );
}
