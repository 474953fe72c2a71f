import { randomUUID } from 'node:crypto';
import {
  AckPolicy,
  connect,
  DeliverPolicy,
  JSONCodec,
  nanos,
  RetentionPolicy,
  StorageType,
  type ConsumerInfo,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type NatsConnection,
  type Subscription,
} from 'nats';
import type { Lifecycle } from '../../core/plugin.js';
import {
  JobRejection,
  type ConsumeOptions,
  type Job,
  type JobHandler,
  type Queue,
  type QueuePosition,
} from '../../core/ports/queue.js';
import { NatsPresence } from './nats-presence.js';

export interface NatsQueueOptions {
  /** NATS server URL(s), comma-separated. */
  url: string;
  /** The work-queue stream; its subjects are `<stream>.<topic>.<encoded key>`. */
  stream: string;
  /** Durable consumer name prefix: topic `t` is consumed by `<consumer>_<t>`, shared by every worker. */
  consumer: string;
  /** The consumer's ack wait: a delivered job with no ack or in-progress ack for this long is redelivered. */
  ackWaitMs: number;
  /** The consumer's max_deliver: deliveries after which a failing job is dead. */
  maxDeliveries: number;
  /** Publish de-duplication window of the stream (Nats-Msg-Id). */
  duplicateWindowMs?: number;
  /** Where failures that are handled by redelivery are reported. */
  warn?(obj: object, msg: string): void;
}

/** What a message carries besides its headers. */
interface Envelope {
  id: string;
  payload: unknown;
}

interface DeadAdvisory {
  stream: string;
  consumer: string;
  stream_seq: number;
  deliveries: number;
}

const codec = JSONCodec<Envelope>();
const advisoryCodec = JSONCodec<DeadAdvisory>();
const TOPIC = /^[A-Za-z0-9_-]{1,64}$/;
/** How many waiting jobs `position` counts at most (each is one direct get). */
const COUNT_LIMIT = 1000;

/**
 * Jobs on NATS JetStream: one work-queue stream, a durable pull consumer per topic shared by every
 * worker process, explicit acks once the handler resolved, in-progress acks as heartbeats, `term`
 * for dropped jobs, `max_deliver` bounded deliveries and publish de-duplication by message id.
 */
export class NatsQueue implements Queue, Lifecycle {
  private nc?: NatsConnection;
  /** False while the client is reconnecting: reads that would wait for a timeout fail at once instead. */
  private connected = true;
  private js?: JetStreamClient;
  private jsm?: JetStreamManager;
  private presence?: NatsPresence;
  private advisories?: Subscription;
  private readonly consumers = new Map<string, Promise<ConsumerInfo>>();
  /** onDead per consumer name, for jobs the server gave up on while their worker was gone. */
  private readonly deadHandlers = new Map<string, { topic: string; onDead: NonNullable<ConsumeOptions['onDead']> }>();
  private readonly stops = new Set<() => Promise<void>>();

  constructor(private readonly opts: NatsQueueOptions) {}

  /** Connects and makes sure the stream exists; throws when NATS or JetStream cannot be reached. */
  async start(): Promise<void> {
    this.nc = await connect({
      servers: this.opts.url.split(','),
      name: `hoist-${process.pid}`,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
    });
    this.js = this.nc.jetstream();
    void (async () => {
      for await (const s of this.nc!.status()) {
        if (s.type === 'disconnect') this.connected = false;
        if (s.type === 'reconnect') this.connected = true;
      }
    })();
    this.jsm = await this.nc.jetstreamManager();
    await this.jsm.streams.info(this.opts.stream).catch(async (err) => {
      if (!/not found/i.test(String(err?.message))) throw err;
      await this.jsm!.streams.add({
        name: this.opts.stream,
        subjects: [`${this.opts.stream}.>`],
        retention: RetentionPolicy.Workqueue,
        storage: StorageType.File,
        duplicate_window: nanos(this.opts.duplicateWindowMs ?? 3_600_000),
      });
    });
    this.presence = new NatsPresence(this.js, `${this.opts.stream}_workers`, Math.max(3000, this.opts.ackWaitMs));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.stops].map((s) => s()));
    this.advisories?.unsubscribe();
    await this.presence?.stop();
    if (this.nc && !this.nc.isClosed()) await this.nc.drain().catch(() => this.nc!.close());
  }

  async check(): Promise<void> {
    this.ensureConnected();
    await this.jsm!.streams.info(this.opts.stream);
  }

  /** `delayMs` is refused: JetStream (2.9) has no delayed delivery, and Hoist enqueues nothing delayed. */
  async enqueue<P>(topic: string, payload: P, opts: { key?: string; delayMs?: number } = {}): Promise<void> {
    if (opts.delayMs) throw new Error('queue-nats: delayed jobs (delayMs) are not supported');
    const key = opts.key ?? randomUUID();
    await this.js!.publish(this.subject(topic, key), codec.encode({ id: key, payload }), {
      msgID: `${topic}:${key}`,
      expect: { streamName: this.opts.stream },
    });
  }

  async consume<P>(topic: string, handler: JobHandler<P>, opts: ConsumeOptions): Promise<() => Promise<void>> {
    const info = await this.ensureConsumer(topic);
    const consumer = await this.js!.consumers.get(this.opts.stream, info.name);
    if (opts.onDead) {
      this.deadHandlers.set(info.name, { topic, onDead: opts.onDead });
      this.advisories ??= this.nc!.subscribe(`$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${this.opts.stream}.*`, {
        queue: `${this.opts.stream}_dead`,
        callback: (err, m) => void (err ? null : this.onMaxDeliveries(advisoryCodec.decode(m.data))),
      });
    }
    const leave = await this.presence!.join(topic, opts.concurrency);
    const abort = new AbortController();
    const slots = Array.from({ length: opts.concurrency }, async () => {
      while (!abort.signal.aborted) {
        const msg = await this.next(consumer, abort.signal);
        if (msg) await this.run(topic, msg, handler as JobHandler, opts, abort.signal);
      }
    });
    const stop = async () => {
      if (abort.signal.aborted) return;
      abort.abort();
      await Promise.allSettled(slots);
      await leave();
      this.stops.delete(stop);
    };
    this.stops.add(stop);
    return stop;
  }

  /**
   * From the stream and consumer state: `running` once the job was delivered (also while it waits
   * for a redelivery), else `waiting` with the topic's undelivered jobs published before it (counted
   * up to 1000); `workers` adds up the concurrency of live consumers (a presence bucket).
   */
  async position(topic: string, key: string): Promise<QueuePosition> {
    this.ensureConnected();
    const [info, workers] = await Promise.all([this.consumerInfo(topic), this.presence!.count(topic)]);
    const seq = await this.jsm!.streams.getMessage(this.opts.stream, { last_by_subj: this.subject(topic, key) }).then(
      (m) => m.seq,
      (err) => {
        if (/no message found|not found/i.test(String(err?.message))) return null;
        throw err;
      },
    );
    if (seq === null) return { jobsAhead: 0, state: 'gone', workers };
    if (seq <= info.delivered.stream_seq) return { jobsAhead: 0, state: 'running', workers };
    let jobsAhead = 0;
    for (let s = info.delivered.stream_seq + 1; jobsAhead < COUNT_LIMIT; jobsAhead++) {
      const next = await this.nextSeq(s, this.filter(topic));
      if (next === null || next >= seq) break;
      s = next + 1;
    }
    return { jobsAhead, state: 'waiting', workers };
  }

  async workers(topic: string): Promise<number> {
    this.ensureConnected();
    return this.presence!.count(topic);
  }

  async depth(topic: string): Promise<{ waiting: number; running: number }> {
    this.ensureConnected();
    const info = await this.consumerInfo(topic);
    return { waiting: info.num_pending, running: info.num_ack_pending };
  }

  private ensureConnected(): void {
    if (!this.nc || this.nc.isClosed() || !this.connected) throw new Error('not connected to NATS');
  }

  /** Waits for one message (null when the wait expired, failed or the consumer stops). */
  private async next(
    consumer: Awaited<ReturnType<JetStreamClient['consumers']['get']>>,
    signal: AbortSignal,
  ): Promise<JsMsg | null> {
    let msg: JsMsg | null = null;
    try {
      const batch = await consumer.fetch({ max_messages: 1, expires: 10_000 });
      const onAbort = () => void batch.stop();
      // A stop while the pull was being sent: end it now, or it would stay open (up to 10 s) and could take a
      // job handed back meanwhile, which then waits out the ack wait.
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
      try {
        for await (const m of batch) msg = m;
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    } catch (err) {
      // NATS away (a restart): the client reconnects; try again shortly.
      if (!signal.aborted) {
        this.opts.warn?.({ err }, 'queue-nats: fetching a job failed; retrying');
        await sleep(500, signal);
      }
    }
    if (msg && signal.aborted) {
      msg.nak();
      return null;
    }
    return msg;
  }

  private async run(
    topic: string,
    msg: JsMsg,
    handler: JobHandler,
    opts: ConsumeOptions,
    signal: AbortSignal,
  ): Promise<void> {
    let envelope: Envelope;
    try {
      envelope = codec.decode(msg.data);
    } catch {
      msg.term('undecodable payload');
      return;
    }
    const job: Job = { id: envelope.id, topic, payload: envelope.payload, deliveries: msg.info.deliveryCount };
    try {
      await handler(job, { heartbeat: async () => msg.working(), signal });
    } catch (err) {
      // A stopping consumer hands the job back at once; its claim keeps other workers off until it lapses.
      if (signal.aborted) return msg.nak();
      const drop = err instanceof JobRejection && err.action === 'drop';
      if (drop || job.deliveries >= this.opts.maxDeliveries) {
        await opts.onDead?.(job, (err as Error).message);
        msg.term((err as Error).message);
        // A terminated message stays in a work-queue stream (delivered no more): remove the dead job.
        await this.jsm!.streams.deleteMessage(this.opts.stream, msg.seq, false).catch((e) =>
          this.opts.warn?.({ err: e, job: job.id }, 'queue-nats: dead job not removed'),
        );
        return;
      }
      return msg.nak(Math.min(30_000, 500 * 2 ** (job.deliveries - 1)));
    }
    // A lost ack only means a redelivery, which finds its work done.
    await msg
      .ackAck({ timeout: 5000 })
      .catch((err) => this.opts.warn?.({ err, job: job.id }, 'queue-nats: ack not confirmed'));
  }

  /** A job whose last delivery went unanswered (its worker died): fails it through onDead, then removes it. */
  private async onMaxDeliveries(a: DeadAdvisory): Promise<void> {
    const dead = this.deadHandlers.get(a.consumer);
    if (!dead || a.stream !== this.opts.stream) return;
    try {
      const m = await this.jsm!.streams.getMessage(this.opts.stream, { seq: a.stream_seq });
      const envelope = codec.decode(m.data);
      await dead.onDead(
        { id: envelope.id, topic: dead.topic, payload: envelope.payload, deliveries: a.deliveries },
        'its worker stopped answering',
      );
      await this.jsm!.streams.deleteMessage(this.opts.stream, a.stream_seq, false);
    } catch (err) {
      this.opts.warn?.({ err, seq: a.stream_seq }, 'queue-nats: a dead job could not be failed');
    }
  }

  /** The sequence of the first message at or after `seq` on `subject` (JetStream API STREAM.MSG.GET), or null. */
  private async nextSeq(seq: number, subject: string): Promise<number | null> {
    const req = JSONCodec().encode({ seq, next_by_subj: subject });
    const res = await this.nc!.request(`$JS.API.STREAM.MSG.GET.${this.opts.stream}`, req, { timeout: 5000 });
    const body = JSONCodec<{ message?: { seq: number }; error?: { code: number; description: string } }>().decode(
      res.data,
    );
    if (body.error?.code === 404) return null;
    if (body.error) throw new Error(`queue-nats: ${body.error.description}`);
    return body.message!.seq;
  }

  /** The subject of the job with `key`: one per job, so `position` finds it by subject. */
  private subject(topic: string, key: string): string {
    return this.filter(topic).slice(0, -1) + Buffer.from(key).toString('base64url');
  }

  /** The subjects of `topic`'s jobs. */
  private filter(topic: string): string {
    if (!TOPIC.test(topic)) throw new Error(`queue-nats: topic ${JSON.stringify(topic)} must match ${TOPIC}`);
    return `${this.opts.stream}.${topic}.*`;
  }

  private async consumerInfo(topic: string): Promise<ConsumerInfo> {
    const { name } = await this.ensureConsumer(topic);
    return this.jsm!.consumers.info(this.opts.stream, name);
  }

  /** Creates the topic's durable consumer, or brings its ack wait and max_deliver up to the configuration. */
  private ensureConsumer(topic: string): Promise<ConsumerInfo> {
    let p = this.consumers.get(topic);
    if (!p) {
      p = (async () => {
        const name = `${this.opts.consumer}_${topic}`;
        const wanted = { ack_wait: nanos(this.opts.ackWaitMs), max_deliver: this.opts.maxDeliveries };
        const existing = await this.jsm!.consumers.info(this.opts.stream, name).catch(() => null);
        if (
          existing &&
          existing.config.ack_wait === wanted.ack_wait &&
          existing.config.max_deliver === wanted.max_deliver
        )
          return existing;
        if (existing) return this.jsm!.consumers.update(this.opts.stream, name, wanted);
        return this.jsm!.consumers.add(this.opts.stream, {
          durable_name: name,
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          filter_subject: this.filter(topic),
          max_ack_pending: -1,
          ...wanted,
        });
      })();
      p.catch(() => this.consumers.delete(topic));
      this.consumers.set(topic, p);
    }
    return p;
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
