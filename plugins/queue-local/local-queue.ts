import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { JobRow } from './job.js';
import { deleteRows, insertRow, queryRows, updateRows, type Lifecycle } from '../../core/plugin.js';
import {
  JobRejection,
  type ConsumeOptions,
  type Job,
  type JobHandler,
  type Queue,
  type QueuePosition,
} from '../../core/ports/queue.js';

export interface LocalQueueOptions {
  /** How long a delivered job stays invisible without a heartbeat before it is redelivered. */
  visibilityMs: number;
  /** Deliveries after which a failing job is dead. */
  maxDeliveries: number;
  /** How often idle consumers look for jobs another process (or a lapsed lease) made available. */
  pollMs: number;
}

/** A job leased to a slot: its row and the lease owner its compare-and-set wrote. */
interface Claimed {
  row: JobRow;
  owner: string;
}

/** A slot waiting for a job: `wake` ends the wait, with a job handed to it or none (look in the database). */
interface IdleSlot {
  wake(handed: Claimed | null): void;
  /** Stops the poll timer and the abort listener from ending the wait: an enqueue is handing the slot a job. */
  reserve(): void;
}

/**
 * Jobs kept in the database (durable across restarts), dispatched to consumers in this process. An
 * enqueue while a slot of the topic is idle writes the job already leased to that slot and hands it
 * over: one insert, no poll and no claim query. The lease is the one a claim writes, so another
 * process never sees the job as waiting, and a crash redelivers it once the lease lapses.
 */
export class LocalQueue implements Queue, Lifecycle {
  /** Idle slots waiting for a job, per topic, longest waiting first. */
  private readonly idleSlots = new Map<string, Set<IdleSlot>>();
  /** Jobs enqueued by this process so far, per topic: a slot that saw one arrive while it looked does not go idle. */
  private readonly enqueued = new Map<string, number>();
  private readonly slots = new Map<string, number>();
  private readonly stops = new Set<() => Promise<void>>();

  constructor(
    private readonly em: EntityManager,
    private readonly opts: LocalQueueOptions,
  ) {}

  async enqueue<P>(topic: string, payload: P, opts: { key?: string; delayMs?: number } = {}): Promise<void> {
    const em = this.em.fork();
    const row = Object.assign(new JobRow(), {
      topic,
      payload,
      key: opts.key ?? null,
      availableAt: new Date(Date.now() + (opts.delayMs ?? 0)),
    });
    // One job needs one slot: waking every idle slot would only have the others race for it and lose.
    const slot = opts.delayMs ? undefined : this.idleSlots.get(topic)?.values().next().value;
    const owner = randomUUID();
    if (slot) {
      this.idleSlots.get(topic)!.delete(slot);
      slot.reserve();
      Object.assign(row, {
        state: 'running',
        leaseOwner: owner,
        leaseUntil: new Date(Date.now() + this.opts.visibilityMs),
        deliveries: 1,
      });
    }
    try {
      await insertRow(em, JobRow, row);
    } catch (err) {
      slot?.wake(null);
      if (err instanceof UniqueConstraintViolationException) return;
      throw err;
    }
    this.enqueued.set(topic, (this.enqueued.get(topic) ?? 0) + 1);
    if (slot) slot.wake({ row, owner });
    // A slot that went idle while the job was written (it was looking then) looks for it in the database.
    else this.idleSlots.get(topic)?.values().next().value?.wake(null);
  }

  async consume<P>(topic: string, handler: JobHandler<P>, opts: ConsumeOptions): Promise<() => Promise<void>> {
    const abort = new AbortController();
    // Every idle slot listens for the stop, and a running job's handler may too.
    setMaxListeners(2 * opts.concurrency + 10, abort.signal);
    this.slots.set(topic, (this.slots.get(topic) ?? 0) + opts.concurrency);
    const slots = Array.from({ length: opts.concurrency }, () => this.slot(topic, handler, opts, abort.signal));
    const stop = async () => {
      if (abort.signal.aborted) return;
      abort.abort();
      await Promise.allSettled(slots);
      this.slots.set(topic, (this.slots.get(topic) ?? 0) - opts.concurrency);
      this.stops.delete(stop);
    };
    this.stops.add(stop);
    return stop;
  }

  async workers(topic: string): Promise<number> {
    return this.slots.get(topic) ?? 0;
  }

  async position(topic: string, key: string): Promise<QueuePosition> {
    const em = this.em.fork();
    const workers = await this.workers(topic);
    // A plain query, not an entity: every poll of a running operation asks (the entity load cost several times it).
    const [job] = await queryRows<{ id: string; state: string; created_at: Date | number }>(
      em,
      'select id, state, created_at from jobs where topic = ? and key = ?',
      [topic, key],
    );
    if (!job) return { jobsAhead: 0, state: 'gone', workers };
    if (job.state === 'running') return { jobsAhead: 0, state: 'running', workers };
    // Jobs enqueued in the same millisecond are ordered by id, as `claim` takes them.
    const createdAt = new Date(job.created_at);
    const jobsAhead = await em.count(JobRow, {
      topic,
      state: 'waiting',
      $or: [{ createdAt: { $lt: createdAt } }, { createdAt, id: { $lt: job.id } }],
    });
    return { jobsAhead, state: 'waiting', workers };
  }

  async depth(topic: string): Promise<{ waiting: number; running: number }> {
    const em = this.em.fork();
    const [waiting, running] = await Promise.all([
      em.count(JobRow, { topic, state: 'waiting' }),
      em.count(JobRow, { topic, state: 'running' }),
    ]);
    return { waiting, running };
  }

  async stop(): Promise<void> {
    await Promise.all([...this.stops].map((s) => s()));
  }

  private async slot<P>(
    topic: string,
    handler: JobHandler<P>,
    opts: ConsumeOptions,
    signal: AbortSignal,
  ): Promise<void> {
    let handed: Claimed | null = null;
    while (!signal.aborted) {
      const seen = this.enqueued.get(topic) ?? 0;
      const claimed = handed ?? (await this.claim(topic).catch(() => null));
      handed = null;
      if (claimed) await this.run(claimed.row, claimed.owner, handler, opts, signal);
      else if ((this.enqueued.get(topic) ?? 0) === seen) handed = await this.idle(topic, signal);
    }
    // A job handed over as the consumer stopped goes back to waiting, as a stopping slot hands back its job.
    if (handed) await this.handBack(handed.row, handed.owner).catch(() => {});
  }

  /**
   * Waits until an enqueue wakes this slot (resolving the job it handed over, if any), the poll
   * interval passes, or the consumer stops.
   */
  private idle(topic: string, signal: AbortSignal): Promise<Claimed | null> {
    // A stop that came while the slot was claiming has already fired its abort event.
    if (signal.aborted) return Promise.resolve(null);
    const slots = this.idleSlots.get(topic) ?? new Set<IdleSlot>();
    this.idleSlots.set(topic, slots);
    return new Promise((resolve) => {
      const slot: IdleSlot = {
        wake: (handed) => {
          slot.reserve();
          resolve(handed);
        },
        reserve: () => {
          clearTimeout(timer);
          slots.delete(slot);
          signal.removeEventListener('abort', lookAgain);
        },
      };
      const lookAgain = () => slot.wake(null);
      const timer = setTimeout(lookAgain, this.opts.pollMs);
      slots.add(slot);
      signal.addEventListener('abort', lookAgain, { once: true });
    });
  }

  /** Makes a leased job waiting again, available at once to any consumer. */
  private async handBack(row: JobRow, owner: string): Promise<void> {
    await this.em
      .fork()
      .nativeUpdate(
        JobRow,
        { id: row.id, leaseOwner: owner },
        { state: 'waiting', leaseOwner: null, leaseUntil: null, availableAt: new Date() },
      );
  }

  /** Leases the oldest available job; a compare-and-set on its state and deliveries makes the claim exclusive. */
  private async claim(topic: string): Promise<Claimed | null> {
    const em = this.em.fork();
    // A plain query, its rows mapped by the ORM: every stage of every deployment is claimed here, and an entity
    // query cost several times as much (bench/orm-reads.ts). Dates are bound as the database stores them.
    const now = em.getPlatform().processDateProperty(new Date());
    const rows = await queryRows<Record<string, unknown>>(
      em,
      'select * from jobs where topic = ? and ' +
        '((state = ? and available_at <= ?) or (state = ? and lease_until < ?)) ' +
        'order by created_at asc, id asc limit 5',
      [topic, 'waiting', now, 'running', now],
    );
    const candidates = rows.map((row: Record<string, unknown>) => em.map(JobRow, row));
    for (const row of candidates) {
      const owner = randomUUID();
      const won = await updateRows(
        em,
        JobRow,
        { id: row.id, state: row.state, deliveries: row.deliveries },
        {
          state: 'running',
          leaseOwner: owner,
          leaseUntil: new Date(Date.now() + this.opts.visibilityMs),
          deliveries: row.deliveries + 1,
        },
      );
      if (won === 1) return { row: Object.assign(row, { deliveries: row.deliveries + 1 }), owner };
    }
    return null;
  }

  private async run<P>(
    row: JobRow,
    owner: string,
    handler: JobHandler<P>,
    opts: ConsumeOptions,
    signal: AbortSignal,
  ): Promise<void> {
    const em = this.em.fork();
    const job: Job<P> = { id: row.id, topic: row.topic, payload: row.payload as P, deliveries: row.deliveries };
    const heartbeat = async () => {
      await em.nativeUpdate(
        JobRow,
        { id: row.id, leaseOwner: owner },
        { leaseUntil: new Date(Date.now() + this.opts.visibilityMs) },
      );
    };
    try {
      await handler(job, { heartbeat, signal });
      await deleteRows(em, JobRow, { id: row.id, leaseOwner: owner });
    } catch (err) {
      // A consumer that is stopping hands the job back: any consumer (here after a restart, or another process) takes
      // it at once.
      if (signal.aborted) return this.handBack(row, owner);
      const drop = err instanceof JobRejection && err.action === 'drop';
      if (drop || job.deliveries >= this.opts.maxDeliveries) {
        const removed = await em.nativeDelete(JobRow, { id: row.id, leaseOwner: owner });
        if (removed) await opts.onDead?.(job, (err as Error).message);
        return;
      }
      const backoff = Math.min(30_000, 500 * 2 ** (job.deliveries - 1));
      await em.nativeUpdate(
        JobRow,
        { id: row.id, leaseOwner: owner },
        { state: 'waiting', leaseOwner: null, leaseUntil: null, availableAt: new Date(Date.now() + backoff) },
      );
    }
  }
}
