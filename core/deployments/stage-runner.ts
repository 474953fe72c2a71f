import type { EntityManager } from '@mikro-orm/core';
import { HoistError } from '../errors.js';
import { Operation } from '../entities/operation.js';
import { Project } from '../entities/project.js';
import { Version } from '../entities/version.js';
import { StageError } from '../operations/stage-error.js';
import type { Stage } from '../operations/state-machine.js';
import type { Job, JobControl } from '../ports/queue.js';
import { OperationStore, type AlsoWrite, type StageJob } from './operation-store.js';

/** What a stage implementation gets. */
export interface StageContext {
  operation: Operation;
  version: Version;
  project: Project;
  attempt: number;
  /** Aborted when the operation is canceled or the worker stops. */
  signal: AbortSignal;
  /** Reports progress within the stage (0–1). */
  progress(fraction: number): void;
}

/** What a finished stage hands back: writes committed with its success, and work for after the commit. */
export interface StageResult {
  also?: AlsoWrite;
  after?(): Promise<void>;
}

/** One stage's work. */
export interface StageImpl {
  run(ctx: StageContext): Promise<StageResult>;
  /** Undoes what an unfinished run left (the operation was canceled or failed); idempotent. */
  abandon?(ctx: StageContext): Promise<void>;
}

/**
 * Runs stage jobs from the queue: marks the stage started, runs it with heartbeats, and records its
 * success or failure through the state machine. A job for a stage that is already done is a no-op
 * (redeliveries are safe); a cancel seen on a heartbeat aborts the running work.
 */
export class StageRunner {
  constructor(
    private readonly em: EntityManager,
    private readonly store: OperationStore,
    private readonly stages: Record<Stage, StageImpl>,
    private readonly heartbeatMs: number,
  ) {}

  /** The queue handler for stage jobs. */
  async handle(job: Job<StageJob>, control: JobControl): Promise<void> {
    const { operationId, stage, attempt } = job.payload;
    const started = await this.store.apply(operationId, { type: 'stage_started', stage, attempt }).catch((err) => {
      // A job for an operation or attempt that moved on (deleted, rejected transition) has nothing to do.
      if (err instanceof HoistError && (err.code === 'not_found' || err.code === 'conflict')) return null;
      throw err;
    });
    if (!started || started.t.noop) return;

    const em = this.em.fork();
    const version = await em.findOneOrFail(Version, { id: started.op.versionId! });
    const project = await em.findOneOrFail(Project, { id: started.op.projectId! });
    const abort = new AbortController();
    const onStop = () => abort.abort(new Error('worker stopping'));
    control.signal.addEventListener('abort', onStop, { once: true });
    let fraction = 0;
    const ctx: StageContext = { operation: started.op, version, project, attempt, signal: abort.signal, progress: (f) => (fraction = Math.max(fraction, f)) };

    let beating = Promise.resolve();
    let sent = 0;
    const timer = setInterval(() => {
      beating = beating.then(async () => {
        await control.heartbeat().catch(() => {});
        const event = fraction > sent ? { type: 'stage_progress' as const, stage, attempt, fraction } : { type: 'heartbeat' as const, stage, attempt };
        sent = fraction;
        const r = await this.store.apply(operationId, event).catch(() => null);
        if (r && r.t.state.stages[stage].status !== 'running') abort.abort(new Error('operation canceled'));
      });
    }, this.heartbeatMs);

    try {
      const result = await this.stages[stage].run(ctx);
      clearInterval(timer);
      await beating;
      if (abort.signal.aborted && !control.signal.aborted) throw new StageError(`${stage}_canceled`, 'Canceled', false);
      const done = await this.store.apply(operationId, { type: 'stage_succeeded', stage, attempt }, result.also);
      // A no-op means the operation moved on (canceled) before the result was committed: undo it.
      if (done.t.noop) await this.stages[stage].abandon?.(ctx);
      else await result.after?.();
    } catch (err) {
      clearInterval(timer);
      await beating;
      if (control.signal.aborted) throw err; // the worker is stopping: the job is redelivered
      await this.stages[stage].abandon?.(ctx).catch(() => {});
      const current = await em.fork().findOne(Operation, { id: operationId });
      if (current && OperationStore.stateOf(current).stages[stage].status !== 'running') return; // canceled meanwhile
      if (err instanceof StageError) {
        await this.store.apply(operationId, { type: 'stage_failed', stage, attempt, error: { code: err.code, message: err.message } });
        return;
      }
      throw err; // unexpected: the queue redelivers, then gives up through fail()
    } finally {
      control.signal.removeEventListener('abort', onStop);
    }
  }

  /** Ends the stage of a job the queue gave up on (too many deliveries) as failed, with guidance. */
  async fail(job: Job<StageJob>, reason: string): Promise<void> {
    const { operationId, stage, attempt } = job.payload;
    await this.store
      .apply(operationId, {
        type: 'stage_failed',
        stage,
        attempt,
        error: { code: `${stage}_internal_error`, message: `The ${stage} stage failed ${job.deliveries} times (${reason}); retry the operation, and report it if it fails again` },
      })
      .catch(() => {});
  }
}
