import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { JobRow } from '../../core/entities/job.js';
import type { Lifecycle } from '../../core/plugin.js';
import { JobRejection, type ConsumeOptions, type Job, type JobHandler, type Queue, type QueuePosition } from '../../core/ports/queue.js';

export interface LocalQueueOptions {
  /** How long a delivered job stays invisible without a heartbeat before it is redelivered. */
  visibilityMs: number;
  /** Deliveries after which a failing job is dead. */
  maxDeliveries: number;
  /** How often idle consumers look for jobs another process (or a lapsed lease) made available. */
  pollMs: number;
}

/** Jobs kept in the database (durable across restarts), dispatched to consumers in this process. */
export class LocalQueue implements Queue, Lifecycle {
  /** Idle slots waiting for a job, per topic, longest waiting first. */
  private readonly idleSlots = new Map<string, Set<() => void>>();
  /** Jobs enqueued by this process so far, per topic: a slot that saw one arrive while it looked does not go idle. */
  private readonly enqueued = new Map<string, number>();
  private readonly workers = new Map<string, number>();
  private readonly stops = new Set<() => Promise<void>>();

  constructor(
    private readonly em: EntityManager,
    private readonly opts: LocalQueueOptions,
  ) {}

  async enqueue<P>(topic: string, payload: P, opts: { key?: string; delayMs?: number } = {}): Promise<void> {
    const em = this.em.fork();
    const row = Object.assign(new JobRow(), { topic, payload, key: opts.key ?? null, availableAt: new Date(Date.now() + (opts.delayMs ?? 0)) });
    try {
      await em.insert(JobRow, row);
    } catch (err) {
      if (err instanceof UniqueConstraintViolationException) return;
      throw err;
    }
    this.enqueued.set(topic, (this.enqueued.get(topic) ?? 0) + 1);
    // One job needs one slot: waking every idle slot would only have the others race for it and lose.
    const first = this.idleSlots.get(topic)?.values().next();
    if (first && !first.done) first.value();
  }

  async consume<P>(topic: string, handler: JobHandler<P>, opts: ConsumeOptions): Promise<() => Promise<void>> {
    const abort = new AbortController();
    this.workers.set(topic, (this.workers.get(topic) ?? 0) + opts.concurrency);
    const slots = Array.from({ length: opts.concurrency }, () => this.slot(topic, handler, opts, abort.signal));
    const stop = async () => {
      if (abort.signal.aborted) return;
      abort.abort();
      await Promise.allSettled(slots);
      this.workers.set(topic, (this.workers.get(topic) ?? 0) - opts.concurrency);
      this.stops.delete(stop);
    };
    this.stops.add(stop);
    return stop;
  }

  async position(topic: string, key: string): Promise<QueuePosition> {
    const em = this.em.fork();
    const workers = this.workers.get(topic) ?? 0;
    const job = await em.findOne(JobRow, { topic, key });
    if (!job) return { jobsAhead: 0, state: 'gone', workers };
    if (job.state === 'running') return { jobsAhead: 0, state: 'running', workers };
    // Jobs enqueued in the same millisecond are ordered by id, as `claim` takes them.
    const jobsAhead = await em.count(JobRow, { topic, state: 'waiting', $or: [{ createdAt: { $lt: job.createdAt } }, { createdAt: job.createdAt, id: { $lt: job.id } }] });
    return { jobsAhead, state: 'waiting', workers };
  }

  async depth(topic: string): Promise<{ waiting: number; running: number }> {
    const em = this.em.fork();
    const [waiting, running] = await Promise.all([em.count(JobRow, { topic, state: 'waiting' }), em.count(JobRow, { topic, state: 'running' })]);
    return { waiting, running };
  }

  async stop(): Promise<void> {
    await Promise.all([...this.stops].map((s) => s()));
  }

  private async slot<P>(topic: string, handler: JobHandler<P>, opts: ConsumeOptions, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const seen = this.enqueued.get(topic) ?? 0;
      const claimed = await this.claim(topic).catch(() => null);
      if (claimed) await this.run(claimed.row, claimed.owner, handler, opts, signal);
      else if ((this.enqueued.get(topic) ?? 0) === seen) await this.idle(topic, signal);
    }
  }

  /** Waits until an enqueue wakes this slot, the poll interval passes, or the consumer stops. */
  private idle(topic: string, signal: AbortSignal): Promise<void> {
    // A stop that came while the slot was claiming has already fired its abort event.
    if (signal.aborted) return Promise.resolve();
    const slots = this.idleSlots.get(topic) ?? new Set<() => void>();
    this.idleSlots.set(topic, slots);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        slots.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, this.opts.pollMs);
      slots.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** Leases the oldest available job; a compare-and-set on its state and deliveries makes the claim exclusive. */
  private async claim(topic: string): Promise<{ row: JobRow; owner: string } | null> {
    const em = this.em.fork();
    const now = new Date();
    const candidates = await em.find(
      JobRow,
      { topic, $or: [{ state: 'waiting', availableAt: { $lte: now } }, { state: 'running', leaseUntil: { $lt: now } }] },
      { orderBy: { createdAt: 'asc', id: 'asc' }, limit: 5 },
    );
    for (const row of candidates) {
      const owner = randomUUID();
      const won = await em.nativeUpdate(
        JobRow,
        { id: row.id, state: row.state, deliveries: row.deliveries },
        { state: 'running', leaseOwner: owner, leaseUntil: new Date(Date.now() + this.opts.visibilityMs), deliveries: row.deliveries + 1 },
      );
      if (won === 1) return { row: Object.assign(row, { deliveries: row.deliveries + 1 }), owner };
    }
    return null;
  }

  private async run<P>(row: JobRow, owner: string, handler: JobHandler<P>, opts: ConsumeOptions, signal: AbortSignal): Promise<void> {
    const em = this.em.fork();
    const job: Job<P> = { id: row.id, topic: row.topic, payload: row.payload as P, deliveries: row.deliveries };
    const heartbeat = async () => {
      await em.nativeUpdate(JobRow, { id: row.id, leaseOwner: owner }, { leaseUntil: new Date(Date.now() + this.opts.visibilityMs) });
    };
    try {
      await handler(job, { heartbeat, signal });
      await em.nativeDelete(JobRow, { id: row.id, leaseOwner: owner });
    } catch (err) {
      // A consumer that is stopping hands the job back: any consumer (here after a restart, or another process) takes it at once.
      if (signal.aborted) {
        await em.nativeUpdate(JobRow, { id: row.id, leaseOwner: owner }, { state: 'waiting', leaseOwner: null, leaseUntil: null, availableAt: new Date() });
        return;
      }
      const drop = err instanceof JobRejection && err.action === 'drop';
      if (drop || job.deliveries >= this.opts.maxDeliveries) {
        const removed = await em.nativeDelete(JobRow, { id: row.id, leaseOwner: owner });
        if (removed) await opts.onDead?.(job, (err as Error).message);
        return;
      }
      const backoff = Math.min(30_000, 500 * 2 ** (job.deliveries - 1));
      await em.nativeUpdate(JobRow, { id: row.id, leaseOwner: owner }, { state: 'waiting', leaseOwner: null, leaseUntil: null, availableAt: new Date(Date.now() + backoff) });
    }
  }
}

