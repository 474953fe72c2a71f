import { BuildCaches } from '../../core/deployments/build-cache.js';
import { DEPLOYER, type Deployer } from '../../core/ports/deployer.js';
import type { Kernel } from '../kernel.js';
import { runPeriodically } from './periodic.js';

/** How often the worker asks the deployer to collect garbage (deployer-local: unreferenced blobs). */
export const GARBAGE_COLLECTION_MS = 10 * 60_000;

/**
 * Starts the worker's periodic garbage collection (Deployer.collectGarbage, when the deployer has one, and the
 * build caches no build gave back for buildCacheDays): once at start, then every 10 minutes. Any number of workers
 * may run it; what one removes, another skips. Returns a function that stops it and waits for a round in progress.
 */
export function startGarbageCollection(kernel: Kernel, everyMs = GARBAGE_COLLECTION_MS): () => Promise<void> {
  const deployer = kernel.get<Deployer>(DEPLOYER);
  const caches = new BuildCaches(kernel.config.dataDir, 0);
  const cacheDays = kernel.config.buildCacheDays;
  return runPeriodically(
    async () => {
      const removed = (await deployer.collectGarbage?.()) ?? 0;
      if (removed) kernel.log.info({ removed }, 'removed unreferenced release files');
      const swept = await caches.sweep(cacheDays * 86_400_000);
      if (swept) kernel.log.info({ removed: swept }, `removed build caches unused for ${cacheDays} days`);
    },
    everyMs,
    (err) => kernel.log.error({ err }, 'garbage collection failed'),
  );
}
