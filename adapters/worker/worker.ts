import { STAGE_RUNNER } from '../deployment-services.js';
import { STAGE_TOPIC, type StageJob } from '../../core/deployments/operation-store.js';
import { RECOVERY } from '../../core/deployments/recovery.js';
import type { StageRunner } from '../../core/deployments/stage-runner.js';
import { QUEUE, type Job, type JobControl, type Queue } from '../../core/ports/queue.js';
import { metricsOf } from '../observability/metrics.js';
import { SANDBOX, type Sandbox } from '../../core/ports/sandbox.js';
import type { Kernel } from '../kernel.js';
import { startDomainChecks } from './domain-scheduler.js';
import { startFileRetention } from './file-retention.js';
import { startGarbageCollection } from './garbage-collection.js';
import { startLogRetention } from './log-retention.js';
import { startPreviewExpiry } from './preview-expiry.js';
import { startRequeue } from './requeue.js';
import { logRetired, startRetirement } from './retirement.js';
import { startUploadRetention } from './upload-retention.js';
import { startUsageRetention } from './usage-retention.js';
import { startRecordRetention } from './record-retention.js';
import { startWebhooks } from './webhooks.js';

/**
 * Starts the worker role: takes stage jobs from the queue, once its sandbox runs and core's Recovery
 * has resumed what the last process left. It also checks customer domains on their schedule, takes expired
 * previews down, collects garbage (unreferenced release files), stops releases still running after their
 * deployment ended (Retirement), removes what manifest uploads keep past their retention, and the archives,
 * artifacts and build logs no retained release needs (FileRetention), purges old project usage, and enqueues
 * again the stages still queued after requeueSeconds (a queue that was away when they were enqueued). It also
 * delivers webhooks.
 * Returns a function that stops taking jobs and waits for running ones to hand back.
 */
export async function startWorker(kernel: Kernel): Promise<() => Promise<void>> {
  const queue = kernel.get<Queue>(QUEUE);
  const runner = kernel.get<StageRunner>(STAGE_RUNNER);
  // Tenant code runs only here: a sandbox that cannot run stops the worker before it takes work.
  await kernel.get<Sandbox>(SANDBOX).prepare();
  const recovered = await kernel.get(RECOVERY).resume();
  if (recovered.workspaces)
    kernel.log.info(
      { workspaces: recovered.workspaces },
      'removed the workspaces of a process that stopped without cleaning up',
    );
  for (const { deploymentId, reason } of recovered.unrestored)
    kernel.log.error({ deploymentId, reason }, 'live release not restored: its environment does not decrypt');
  logRetired(kernel.log, recovered.retired);
  const { stageSeconds } = metricsOf(kernel);
  const handle = async (job: Job<StageJob>, control: JobControl) => {
    const done = stageSeconds.startTimer({ stage: job.payload.stage });
    try {
      await runner.handle(job, control);
      done({ outcome: 'done' });
    } catch (err) {
      done({ outcome: 'error' });
      throw err;
    }
  };
  const stopConsuming = await queue.consume<StageJob>(STAGE_TOPIC, handle, {
    concurrency: kernel.config.workerConcurrency,
    onDead: (job, reason) => runner.fail(job as never, reason),
  });
  const stopDomainChecks = startDomainChecks(kernel);
  const stopGarbageCollection = startGarbageCollection(kernel);
  const stopPreviewExpiry = startPreviewExpiry(kernel);
  const stopUploadRetention = startUploadRetention(kernel);
  const stopLogRetention = startLogRetention(kernel);
  const stopUsageRetention = startUsageRetention(kernel);
  const stopRecordRetention = startRecordRetention(kernel);
  const stopFileRetention = startFileRetention(kernel);
  const stopRetirement = startRetirement(kernel);
  const stopRequeue = startRequeue(kernel);
  const stopWebhooks = await startWebhooks(kernel);
  return async () => {
    await stopWebhooks();
    await stopRequeue();
    await stopRetirement();
    await stopFileRetention();
    await stopLogRetention();
    await stopUsageRetention();
    await stopRecordRetention();
    await stopUploadRetention();
    await stopDomainChecks();
    await stopPreviewExpiry();
    await stopGarbageCollection();
    await stopConsuming();
  };
}
