import type { EntityManager } from '@mikro-orm/core';
import { HoistError } from '../errors.js';
import { Operation } from '../entities/operation.js';
import { Project } from '../entities/project.js';
import { Version } from '../entities/version.js';
import { loadById } from '../entities/plain-sql.js';
import { StageError } from '../errors.js';
import { deterministicFailure } from '../operations/stage-error.js';
import { STAGES, type OperationState, type Stage, type Transition } from '../operations/state-machine.js';
import type { Job, JobControl } from '../ports/queue.js';
import type { Logger } from '../tokens.js';
import { OperationStore, type AlsoWrite, type StageJob } from './operation-store.js';
import type { Redaction } from './redaction.js';

/** The longest stage error message stored and shown, in characters; a longer one is cut there, after redaction. */
export const STAGE_MESSAGE_MAX = 1000;

/** `message` cut at STAGE_MESSAGE_MAX characters, with a marker saying how long it was. */
export function capMessage(message: string): string {
  if (message.length <= STAGE_MESSAGE_MAX) return message;
  return `${message.slice(0, STAGE_MESSAGE_MAX)}… [cut: ${message.length} characters in all]`;
}

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
  /**
   * The archive's file paths (under the root directory), once a stage of this claim read them (Analyze): what a
   * stage run inline after it may judge on.
   */
  files?: string[];
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
  /**
   * Makes what a later stage needs of this one when it was `skipped` (Build under skip_build packs
   * the upload as is); runs as that later stage starts, in its claim. Idempotent.
   */
  skipped?(ctx: StageContext): Promise<void>;
  /**
   * This stage's whole work when it has nothing to run (Build of a site that builds nothing), done in the claim of
   * the stage before it, right after that one's `run`, with the context it left: its writes go into `also`, which
   * commits with that stage's success (the stage then shows succeeded, started and finished at once), and the queue
   * never carries it. Null, or a throw, when the stage must run on its own, as a job of its own. It writes nothing
   * before that commit: a commit that does not happen (a cancel) leaves nothing of it.
   */
  inline?(ctx: StageContext): Promise<StageResult | null>;
}

/**
 * Runs stage jobs from the queue: claims the stage (a lease and a fencing token, written by
 * compare-and-set on the operation), runs it with heartbeats, and records its success or failure
 * through the state machine with the claim's token. A job for a stage that is already done is a
 * no-op (redeliveries are safe); one for a stage another worker holds waits until that claim ends
 * or lapses. A cancel, or a newer claim, seen on a heartbeat aborts the running work, and a late
 * worker's result is refused by its old token. A worker that stops hands its claim back.
 *
 * A failure ends the stage at once when a redelivery would fail the same way (a StageError, or a
 * filesystem error such as a name too long); any other error hands the claim back before the queue
 * redelivers the job, so the next delivery runs at once instead of waiting out the lease. Every
 * error message is stored redacted: no server path, no value of the operation's environment.
 */
export class StageRunner {
  constructor(
    private readonly em: EntityManager,
    private readonly store: OperationStore,
    private readonly stages: Record<Stage, StageImpl>,
    private readonly heartbeatMs: number,
    /** How long a claim holds without a heartbeat: the queue's visibility timeout (ack wait). */
    private readonly leaseMs: number,
    private readonly log: Logger,
    /** Rewrites error messages before they are stored; without it they are stored as thrown. */
    private readonly redaction?: Redaction,
  ) {}

  /** The queue handler for stage jobs. */
  async handle(job: Job<StageJob>, control: JobControl): Promise<void> {
    const { operationId, stage, attempt } = job.payload;
    // Logs a failure the stage goes on without; null stands for the missing answer.
    const warn = (what: string) => (err: unknown) => (this.log.warn({ err, operationId, stage, attempt }, what), null);
    const started = await this.claim(job.payload, control);
    if (!started) return;
    const token = started.t.state.stages[stage].token;

    const em = this.em.fork();
    const [version, project] = await Promise.all([
      loadById(em, Version, started.op.versionId!),
      loadById(em, Project, started.op.projectId!),
    ]);
    // Gone with its project (a deletion): the queue gives the job up after its deliveries.
    if (!version || !project) throw new Error(`operation ${operationId} has no version or project any more`);
    const abort = new AbortController();
    const onStop = () => abort.abort(new Error('worker stopping'));
    control.signal.addEventListener('abort', onStop, { once: true });
    // A stop that came while the claim and its records were read has fired its event already.
    if (control.signal.aborted) onStop();
    let fraction = 0;
    const ctx: StageContext = {
      operation: started.op,
      version,
      project,
      attempt,
      signal: abort.signal,
      progress: (f) => (fraction = Math.max(fraction, f)),
    };

    let beating = Promise.resolve();
    let sent = 0;
    const timer = setInterval(() => {
      beating = beating.then(async () => {
        // A missed heartbeat is sent again next time; the lease lapses only after several.
        await control.heartbeat().catch(warn('the queue took no heartbeat of the stage job'));
        const event =
          fraction > sent
            ? { type: 'stage_progress' as const, stage, attempt, token, fraction }
            : { type: 'heartbeat' as const, stage, attempt, token };
        sent = fraction;
        const r = await this.store.apply(operationId, event).catch(warn('the stage heartbeat was not recorded'));
        if (r && r.t.state.stages[stage].status !== 'running') abort.abort(new Error('operation canceled'));
        else if (r && r.t.state.stages[stage].token !== token) abort.abort(new Error('claim lost'));
      });
    }, this.heartbeatMs);

    try {
      for (const earlier of STAGES.slice(0, STAGES.indexOf(stage)))
        if (started.t.state.stages[earlier].status === 'skipped') await this.stages[earlier]?.skipped?.(ctx);
      // Stopped before it began (an abort event fired already never reaches a listener the stage adds).
      abort.signal.throwIfAborted();
      const result = await this.stages[stage].run(ctx);
      const next = STAGES[STAGES.indexOf(stage) + 1];
      const inline = next && started.t.state.stages[next].status === 'queued' ? await this.inline(next, ctx) : null;
      clearInterval(timer);
      await beating;
      if (abort.signal.aborted && !control.signal.aborted) throw new StageError(`${stage}_canceled`, 'Canceled');
      const succeeded = {
        type: 'stage_succeeded' as const,
        stage,
        attempt,
        token,
        ...(inline ? { inline: next } : {}),
      };
      const also: AlsoWrite | undefined = inline
        ? async (tx, t, op) => {
            await result.also?.(tx, t, op);
            await inline.also?.(tx, t, op);
          }
        : result.also;
      const done = await this.store.apply(operationId, succeeded, also);
      // A no-op means the operation moved on (canceled) before the result was committed: undo it,
      // unless a newer claim runs the stage now (its work must not be touched).
      if (!done.t.noop) {
        await result.after?.();
        await inline?.after?.();
      } else if (!StageRunner.claimedByOther(done.t.state, stage, token)) await this.stages[stage].abandon?.(ctx);
    } catch (err) {
      clearInterval(timer);
      await beating;
      if (control.signal.aborted) {
        // The worker is stopping: hand the claim back so the redelivered job need not wait out the lease
        // (which it does when the release fails).
        await this.store
          .apply(operationId, { type: 'stage_released', stage, attempt, token })
          .catch(warn('the claim of a stopping worker was not handed back'));
        throw err;
      }
      const before = await em.fork().findOne(Operation, { id: operationId });
      // A newer claim runs it.
      if (before && StageRunner.claimedByOther(OperationStore.stateOf(before), stage, token)) return;
      await this.stages[stage].abandon?.(ctx).catch(warn('undoing the failed stage failed; it may leave work behind'));
      const current = await em.fork().findOne(Operation, { id: operationId });
      if (current && OperationStore.stateOf(current).stages[stage].status !== 'running') return; // canceled meanwhile
      const failure = err instanceof StageError ? err : deterministicFailure(err, stage);
      if (failure) {
        await this.store.apply(operationId, {
          type: 'stage_failed',
          stage,
          attempt,
          token,
          error: await this.shown(started.op, failure),
        });
        return;
      }
      // Unexpected, and maybe passing (a dropped connection, a full disk): the queue delivers it again
      // after a short backoff, and the claim is handed back so that delivery need not wait out the lease. The
      // operator's log says why, redacted as the operation's stored messages are (the stack names Hoist's code).
      const { code, message } = err as NodeJS.ErrnoException;
      const reason = await this.shown(started.op, { code: String(code ?? ''), message: String(message) })
        .then((s) => s.message)
        .catch(() => 'its reason could not be redacted');
      this.log.warn(
        { operationId, stage, attempt, deliveries: job.deliveries, code, reason },
        'a stage failed unexpectedly: the queue delivers it again',
      );
      await this.store
        .apply(operationId, { type: 'stage_released', stage, attempt, token })
        .catch(warn('the claim of a failed attempt was not handed back'));
      throw err; // the queue redelivers, then gives up through fail()
    } finally {
      control.signal.removeEventListener('abort', onStop);
    }
  }

  /** What stage `next` does inline (StageImpl.inline), or null: it runs as a job of its own. */
  private async inline(next: Stage, ctx: StageContext): Promise<StageResult | null> {
    if (ctx.signal.aborted) return null;
    return (
      (await this.stages[next]?.inline?.(ctx).catch((err: unknown) => {
        // Its own run meets the same again, and fails (or not) in its own name.
        this.log.debug({ err, operationId: ctx.operation.id, stage: next }, 'the stage runs on its own, not inline');
        return null;
      })) ?? null
    );
  }

  /**
   * Claims the job's stage. Returns null when there is nothing to do (the stage is done, the
   * operation moved on or is gone). While another worker's claim holds, waits (heartbeating the
   * job) until that claim ends or lapses; throws when this worker stops meanwhile.
   */
  private async claim(job: StageJob, control: JobControl): Promise<{ t: Transition; op: Operation } | null> {
    const { operationId, stage, attempt } = job;
    for (;;) {
      const r = await this.store
        .apply(operationId, { type: 'stage_started', stage, attempt, leaseMs: this.leaseMs })
        .catch((err) => {
          // A job for an operation or attempt that moved on (deleted, rejected transition) has nothing to do.
          if (err instanceof HoistError && (err.code === 'not_found' || err.code === 'conflict')) return null;
          throw err;
        });
      if (!r) return null;
      if (!r.t.noop) return r;
      if (r.t.state.stages[stage].status !== 'running' || r.t.state.attempt !== attempt) return null;
      await control.heartbeat();
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(done, this.heartbeatMs);
        function done() {
          clearTimeout(timer);
          control.signal.removeEventListener('abort', done);
          if (control.signal.aborted) reject(new Error('worker stopping'));
          else resolve();
        }
        control.signal.addEventListener('abort', done, { once: true });
      });
    }
  }

  /** True when the stage runs under a claim other than `token` (a newer worker took it over). */
  private static claimedByOther(state: OperationState, stage: Stage, token: number | undefined): boolean {
    const s = state.stages[stage];
    return s.status === 'running' && s.token !== token;
  }

  /**
   * The code and message of a failure as stored and shown: the message redacted for the operation, then (so that no
   * secret is cut before it is recognised) capped at STAGE_MESSAGE_MAX characters.
   */
  private async shown(
    op: Operation,
    err: { code: string; message: string },
  ): Promise<{ code: string; message: string }> {
    if (!this.redaction) return { code: err.code, message: capMessage(err.message) };
    const redactor = await this.redaction.forOperation(op.id, op.projectId);
    return { code: err.code, message: capMessage(redactor.text(err.message)) };
  }

  /** Ends the stage of a job the queue gave up on (too many deliveries) as failed, with guidance. */
  async fail(job: Job<StageJob>, reason: string): Promise<void> {
    const { operationId, stage, attempt } = job.payload;
    const op = await this.em.fork().findOne(Operation, { id: operationId });
    if (!op) return;
    const guidance = 'retry the operation, and report it if it fails again';
    const error = await this.shown(op, {
      code: `${stage}_internal_error`,
      message: `The ${stage} stage failed ${job.deliveries} times (${reason}); ${guidance}`,
    }).catch(() => ({
      code: `${stage}_internal_error`,
      message: `The ${stage} stage failed ${job.deliveries} times; ${guidance}`,
    }));
    await this.store
      .apply(operationId, { type: 'stage_failed', stage, attempt, error })
      .catch((err) =>
        this.log.error({ err, operationId, stage, attempt }, 'the stage the queue gave up on was not marked failed'),
      );
  }
}
