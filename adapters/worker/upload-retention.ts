import { KEPT_FILES } from '../../core/uploads/kept-files.js';
import { UPLOAD_MANIFESTS } from '../../core/uploads/upload-manifests.js';
import { UPLOAD_SESSION_SERVICE } from '../../core/uploads/upload-session-service.js';
import type { Kernel } from '../kernel.js';
import { runPeriodically } from './periodic.js';

/**
 * How often the worker removes expired upload manifests, the kept files the plans no longer allow, and what expired
 * upload sessions leave.
 */
export const UPLOAD_RETENTION_MS = 15 * 60_000;

/**
 * Starts the worker's periodic sweep of what manifest uploads keep (UploadManifests.removeExpired,
 * KeptFiles.sweep) and of what expired upload sessions leave (UploadSessionService.removeExpired): once at start,
 * then every 15 minutes, each sweep whether another failed. Any number of workers may run it; what one
 * removes, another skips. Returns a function that stops it and waits for a round in progress.
 */
export function startUploadRetention(kernel: Kernel, everyMs = UPLOAD_RETENTION_MS): () => Promise<void> {
  const manifests = kernel.get(UPLOAD_MANIFESTS);
  const kept = kernel.get(KEPT_FILES);
  const sessions = kernel.get(UPLOAD_SESSION_SERVICE);
  return runPeriodically(
    async (stopped) => {
      // Each sweep on its own: one that fails leaves the others to run.
      const failed: unknown[] = [];
      const step = <T>(work: () => Promise<T>) => work().catch((err) => void failed.push(err));
      const manifestsRemoved = await step(() => manifests.removeExpired());
      const files = await step(() => kept.sweep());
      if (manifestsRemoved || files?.expired || files?.evicted || files?.orphans)
        kernel.log.info(
          { manifests: manifestsRemoved, ...(files ?? {}) },
          'removed expired upload manifests and kept files',
        );
      const expired = await step(() => sessions.removeExpired(undefined, stopped));
      if (expired && (expired.uploads || expired.sessions || expired.failed))
        kernel.log.info(expired, 'removed the pieces of expired resumable uploads and old upload sessions');
      if (failed.length) throw new AggregateError(failed, `${failed.length} upload retention sweeps failed`);
    },
    everyMs,
    (err) => kernel.log.error({ err }, 'upload retention sweep failed'),
  );
}
