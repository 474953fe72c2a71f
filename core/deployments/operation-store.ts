import type { EntityManager } from '@mikro-orm/core';
import { updateRows } from '../entities/plain-sql.js';
import { Operation } from '../entities/operation.js';
import { Project } from '../entities/project.js';
import { HoistError, notFound } from '../errors.js';
import {
  transition,
  type Effect,
  type OperationEvent,
  type OperationState,
  type Stage,
  type Transition,
} from '../operations/state-machine.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import type { Clock } from '../ports/clock.js';
import type { Queue } from '../ports/queue.js';
import type { WebhookDeliveries } from '../webhooks/webhook-deliveries.js';
import type { AccountShare } from './account-share.js';
import { OPERATIONS_CHANNEL, projectOperations } from './log-chunks.js';

/** The queue topic of deployment stages. */
export const STAGE_TOPIC = 'stages';

/** The payload of a stage job. */
export interface StageJob {
  operationId: string;
  stage: Stage;
  attempt: number;
}

/** The queue key of a stage job: a repeat of the same stage and attempt is de-duplicated. */
export const stageJobKey = (j: StageJob) => `${j.operationId}:${j.stage}:${j.attempt}`;

/** Extra writes made in the same transaction as a transition (e.g. the route switch). */
export type AlsoWrite = (em: EntityManager, t: Transition, op: Operation) => Promise<void>;

/** How many unfinished operations the store keeps as it last wrote them (a worker holds a few). */
const REMEMBERED = 256;

/**
 * Persists state-machine transitions of deployment operations. Every write is a compare-and-set on
 * the operation's revision, so a late or redelivered worker can never overwrite a newer state (a
 * cancel, a retry); a lost race re-reads and re-applies the event. The store remembers each unfinished
 * operation as it last wrote or read it and writes on that without reading first: a newer revision
 * (written by another process) makes the write miss, and then it is read.
 */
export class OperationStore {
  /** Unfinished operations as this store last wrote or read them, least recently used first. */
  private readonly recent = new Map<string, Operation>();

  constructor(
    private readonly em: EntityManager,
    private readonly queue: Queue,
    private readonly clock: Clock,
    private readonly changes?: Pick<ChangeFeed, 'publish'>,
    /** Records the webhook deliveries of a deployment that ends, in the transaction that ends it. */
    private readonly webhooks?: Pick<WebhookDeliveries, 'record' | 'dispatch'>,
    /** Lets an account's held chains go when one of its chains ends. */
    private readonly share?: Pick<AccountShare, 'release'>,
  ) {}

  /** The state of a deployment operation (throws not_found for another kind). */
  static stateOf(op: Operation): OperationState {
    if (!op.state) throw notFound('Deployment operation');
    return op.state as unknown as OperationState;
  }

  /**
   * Applies `event` to the operation and, in the same transaction, runs `also` (which may throw to
   * abort everything). After the commit, carries out the effects (enqueue stages). Returns the
   * transition (noop when nothing changed) and the operation as written. The operation as this store
   * last wrote it is tried first instead of a read (a newer revision makes the write miss, then it is read).
   */
  async apply(operationId: string, event: OperationEvent, also?: AlsoWrite): Promise<{ t: Transition; op: Operation }> {
    for (let tries = 0; ; tries++) {
      const em = this.em.fork();
      const known = tries === 0 ? this.recent.get(operationId) : undefined;
      const guessed = known !== undefined;
      const op = known ? Object.assign(new Operation(), known) : await em.findOne(Operation, { id: operationId });
      if (!op) throw notFound('Operation');
      let t: Transition;
      try {
        t = transition(OperationStore.stateOf(op), event, this.clock.now());
      } catch (err) {
        // Refused by what the caller knew: judged again on what is stored.
        if (guessed) continue;
        throw err;
      }
      if (!guessed) this.remember(op);
      const finished = t.effects.some((e) => e.type === 'finish');
      let deliveries: string[] = [];
      if (t.noop) {
        // Nothing to write by what the caller knew: whether that still holds is read.
        if (guessed) continue;
        await this.carryOut(op, t.effects);
        return { t, op };
      }
      const cas = (db: EntityManager) =>
        updateRows(db, Operation, { id: op.id, revision: op.revision }, this.fields(op, t));
      // A write of the operation alone (a claim, a heartbeat) is one statement, atomic without a transaction.
      // clear: the transaction starts with an empty identity map, so its closing flush has nothing to compare.
      const won =
        !also && !(finished && op.projectId)
          ? (await cas(em)) === 1
          : await em.transactional(
              async (tx) => {
                if ((await cas(tx)) !== 1) return false;
                if (finished && op.projectId) {
                  const chain = { id: op.projectId, activeOperationId: op.id };
                  await updateRows(tx, Project, chain, { activeOperationId: null });
                  deliveries = (await this.webhooks?.record(tx, op.projectId, op.id, t.state.status)) ?? [];
                }
                await also?.(tx, t, op);
                return true;
              },
              { clear: true },
            );
      if (!won) this.recent.delete(op.id);
      if (won) {
        Object.assign(op, this.fields(op, t));
        this.remember(op);
        // First what is kept of the project's other operations (their release may no longer be the live one): this
        // process drops it in this continuation, before it serves this one finished.
        if (finished && op.projectId)
          await this.changes?.publish(OPERATIONS_CHANNEL, projectOperations(op.projectId)).catch(() => undefined);
        // Event streams of the operation (any process) wake at once; they also poll, so a lost one only delays.
        await this.changes?.publish(OPERATIONS_CHANNEL, op.id).catch(() => undefined);
        if (deliveries.length) await this.webhooks!.dispatch(deliveries);
        await this.carryOut(op, t.effects);
        // A release that fails is made by the workers' next sweep (Recovery.requeue).
        if (finished) await this.release(op.accountId).catch(() => 0);
        return { t, op };
      }
      if (tries >= 20) throw new HoistError('conflict', 'The operation is changing too fast; try again');
    }
  }

  /**
   * Keeps `op`, as just written or read, to write on next without a read; forgets it once finished (a retry reads
   * it again).
   */
  private remember(op: Operation): void {
    this.recent.delete(op.id);
    if (op.status !== 'running' && op.status !== 'queued') return;
    this.recent.set(op.id, Object.assign(new Operation(), op));
    if (this.recent.size > REMEMBERED) this.recent.delete(this.recent.keys().next().value!);
  }

  /**
   * Enqueues the stage jobs among `effects` (de-duplicated by key, so repeating is harmless). `op` is the operation as
   * just written or read: the stage's claim writes on it without a read.
   */
  async carryOut(op: Operation, effects: Effect[]): Promise<void> {
    this.remember(op);
    // A held chain's stage is enqueued when its account's share lets it go (release).
    if (op.heldSince) return;
    for (const e of effects) {
      if (e.type === 'enqueue_stage') {
        const job: StageJob = { operationId: op.id, stage: e.stage, attempt: e.attempt };
        await this.queue.enqueue(STAGE_TOPIC, job, { key: stageJobKey(job) });
      }
    }
  }

  /**
   * Lets go of the account's held chains its share of the workers has room for now (AccountShare.release) and
   * enqueues their current stage; returns how many.
   */
  async release(accountId: string): Promise<number> {
    const freed = (await this.share?.release(accountId)) ?? [];
    for (const op of freed) {
      const state = OperationStore.stateOf(op);
      await this.changes?.publish(OPERATIONS_CHANNEL, op.id).catch(() => undefined);
      await this.carryOut(op, [{ type: 'enqueue_stage', stage: state.current!, attempt: state.attempt }]);
    }
    return freed.length;
  }

  private fields(op: Operation, t: Transition) {
    const s = t.state;
    return {
      state: s as unknown as Record<string, unknown>,
      status: s.status,
      progress: s.progress,
      error: s.error,
      finishedAt: s.finishedAt ? new Date(s.finishedAt) : null,
      revision: op.revision + 1,
      updatedAt: this.clock.now(),
    };
  }
}
