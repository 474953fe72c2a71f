import { token } from '../tokens.js';

/** A unit of work taken from the queue. */
export interface Job<P = unknown> {
  id: string;
  topic: string;
  payload: P;
  /** 1 on the first delivery; grows with each redelivery. */
  deliveries: number;
}

/** What a handler gets besides the job. */
export interface JobControl {
  /** Extends the job's lease; call it at least every visibility timeout / 3 while working. */
  heartbeat(): Promise<void>;
  /** Aborted when the consumer stops; the handler should stop early (the job is redelivered later). */
  signal: AbortSignal;
}

/** What a handler decides about a job it could not finish. */
export class JobRejection extends Error {
  override name = 'JobRejection';
  /** `retry` redelivers after a delay; `drop` ends the job for good (an error a retry will not fix). */
  constructor(
    message: string,
    readonly action: 'retry' | 'drop',
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export type JobHandler<P = unknown> = (job: Job<P>, control: JobControl) => Promise<void>;

export interface ConsumeOptions {
  /** Jobs handled at once by this consumer. */
  concurrency: number;
  /** Called when a job exhausts its deliveries (`maxDeliveries`) or is dropped, after it is removed. */
  onDead?(job: Job, reason: string): Promise<void>;
}

/** Where a job stands, for the operation's queue information. */
export interface QueuePosition {
  /** Jobs of the topic waiting ahead of this one (0 when it is being worked on). */
  jobsAhead: number;
  /** The job's state: waiting, running, or gone (done or unknown). */
  state: 'waiting' | 'running' | 'gone';
  /** Consumers of the topic currently known to be alive. */
  workers: number;
}

/**
 * Durable, at-least-once work queue. Plugins: `queue-local` (jobs in the database, dispatched in
 * process; the default) and `queue-nats` (JetStream).
 */
export interface Queue {
  /**
   * Adds a job. `key` de-duplicates: a second enqueue with the key of a job that is still waiting
   * or running is a no-op. Resolves once the job is durable.
   */
  enqueue<P>(topic: string, payload: P, opts?: { key?: string; delayMs?: number }): Promise<void>;
  /**
   * Starts handling jobs of `topic`. A job is acknowledged when the handler resolves; a throw
   * redelivers it after a backoff (JobRejection 'drop' ends it), up to `maxDeliveries`.
   * Returns a function that stops consuming and waits for running handlers.
   */
  consume<P>(topic: string, handler: JobHandler<P>, opts: ConsumeOptions): Promise<() => Promise<void>>;
  /** Where the job with `key` stands in `topic`. */
  position(topic: string, key: string): Promise<QueuePosition>;
  /**
   * The slots of live consumers of `topic` (their concurrency added up), as `position` counts them: every process's
   * where the backend can tell (queue-nats), else this process's own (queue-local).
   */
  workers(topic: string): Promise<number>;
  /** How many jobs of `topic` wait and run now, for metrics; absent when the backend cannot tell. */
  depth?(topic: string): Promise<{ waiting: number; running: number }>;
}

export const QUEUE = token<Queue>('hoist.Queue');
