import { OPERATION_STORE, STAGE_RUNNER } from '../deployment-services.js';
import { Operation } from '../../core/entities/operation.js';
import { STAGE_TOPIC, type OperationStore, type StageJob } from '../../core/deployments/operation-store.js';
import type { StageRunner } from '../../core/deployments/stage-runner.js';
import type { OperationState } from '../../core/operations/state-machine.js';
import { QUEUE, type Job, type JobControl, type Queue } from '../../core/ports/queue.js';
import { metricsOf } from '../observability/metrics.js';
import { DEPLOYER, type Deployer } from '../../core/ports/deployer.js';
import { liveReleaseSpecs } from '../../core/deployments/release-specs.js';
import { sweepWorkspaces } from '../../core/deployments/workspace.js';
import { SANDBOX, type Sandbox } from '../../core/ports/sandbox.js';
import { ENVIRONMENT_SERVICE, type EnvironmentService } from '../../core/environment/environment-service.js';
import type { Kernel } from '../kernel.js';
import { startDomainChecks } from './domain-scheduler.js';

/**
 * Starts the worker role: takes stage jobs from the queue. At start it removes the workspaces a
 * crashed process left behind, brings live releases back
 * (Deployer.restore) and re-enqueues the current stage
 * of every unfinished deployment (the queue de-duplicates), so a chain interrupted between a stage's
 * commit and the next enqueue resumes. It also checks customer domains on their schedule. Returns a function that stops taking jobs and waits for
 * running ones to hand back.
 */
export async function startWorker(kernel: Kernel): Promise<() => Promise<void>> {
  const queue = kernel.get<Queue>(QUEUE);
  const runner = kernel.get<StageRunner>(STAGE_RUNNER);
  const store = kernel.get<OperationStore>(OPERATION_STORE);
  // Tenant code runs only here: a sandbox that cannot run stops the worker before it takes work.
  await kernel.get<Sandbox>(SANDBOX).prepare();
  const em = kernel.orm.em.fork();
  const swept = await sweepWorkspaces(kernel.config.dataDir);
  if (swept) kernel.log.info({ workspaces: swept }, 'removed the workspaces of a process that stopped without cleaning up');
  const specs = await liveReleaseSpecs(em, kernel.get<EnvironmentService>(ENVIRONMENT_SERVICE), (deploymentId, err) =>
    kernel.log.error({ deploymentId, reason: err.message }, 'live release not restored: its environment does not decrypt'),
  );
  await kernel.get<Deployer>(DEPLOYER).restore(specs);
  for (const op of await em.find(Operation, { kind: 'deploy', status: 'running' })) {
    const state = op.state as unknown as OperationState;
    if (state?.current && state.stages[state.current].status !== 'skipped') {
      await store.carryOut(op, [{ type: 'enqueue_stage', stage: state.current, attempt: state.attempt }]);
    }
  }
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
  return async () => {
    await stopDomainChecks();
    await stopConsuming();
  };
}
