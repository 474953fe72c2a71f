import { randomUUID } from 'node:crypto';
import type { JetStreamClient, KV } from 'nats';

/**
 * Which consumers are alive, for `Queue.position().workers`: each consuming process keeps a key
 * `<topic>.<instance>` (its concurrency) fresh in a KV bucket whose entries expire after `ttlMs`,
 * so a worker that died drops out without saying so.
 */
export class NatsPresence {
  private kv?: Promise<KV>;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly js: JetStreamClient,
    readonly bucket: string,
    private readonly ttlMs: number,
  ) {}

  /** Announces `concurrency` slots on `topic` until the returned function is called. */
  async join(topic: string, concurrency: number): Promise<() => Promise<void>> {
    const kv = await this.open();
    const key = `${topic}.${randomUUID()}`;
    // A missed put is made again a third of the TTL later; the key lapses only after three in a row.
    const put = () => kv.put(key, String(concurrency)).catch(() => 0);
    await put();
    const timer = setInterval(put, this.ttlMs / 3);
    this.timers.add(timer);
    return async () => {
      clearInterval(timer);
      this.timers.delete(timer);
      await kv.delete(key).catch(() => {}); // a key not deleted lapses after its TTL
    };
  }

  /** The slots announced on `topic` by live consumers. */
  async count(topic: string): Promise<number> {
    const kv = await this.open();
    // Keys first: awaiting inside the keys iteration cuts it short.
    const keys: string[] = [];
    for await (const key of await kv.keys(`${topic}.*`)) keys.push(key);
    const entries = await Promise.all(keys.map((k) => kv.get(k)));
    return entries.reduce((sum, e) => sum + (e?.operation === 'PUT' ? Number(e.string()) || 0 : 0), 0);
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
  }

  private open(): Promise<KV> {
    this.kv ??= this.js.views.kv(this.bucket, { ttl: this.ttlMs, history: 1 });
    this.kv.catch(() => (this.kv = undefined));
    return this.kv;
  }
}
