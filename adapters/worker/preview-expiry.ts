import { PREVIEWS } from '../../core/deployments/previews.js';
import type { Kernel } from '../kernel.js';
import { runPeriodically } from './periodic.js';

/** How often the worker takes expired previews down (the edge stops serving each at its expiry already). */
export const PREVIEW_EXPIRY_MS = 60_000;

/**
 * Starts the worker's periodic removal of expired previews (Previews.expire): once at start, then every minute.
 * Any number of workers may run it; of two, one takes each preview down. Returns a function that stops it.
 */
export function startPreviewExpiry(kernel: Kernel, everyMs = PREVIEW_EXPIRY_MS): () => Promise<void> {
  const previews = kernel.get(PREVIEWS);
  return runPeriodically(
    async () => {
      const expired = await previews.expire();
      if (expired) kernel.log.info({ expired }, 'took expired previews down');
    },
    everyMs,
    (err) => kernel.log.error({ err }, 'preview expiry failed'),
  );
}
