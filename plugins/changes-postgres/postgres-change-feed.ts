import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { CHANNEL, type ChangeFeed } from '../../core/ports/change-feed.js';

export interface PostgresChangeFeedOptions {
  /** PostgreSQL connection URL. */
  url: string;
  /** Delay before a lost listening connection is opened again (ms). */
  retryMs?: number;
  warn: (obj: object, msg: string) => void;
}

type Listener = (key: string | null) => unknown;

/** NOTIFY channels are identifiers shared by every database of the server: ours carry a prefix. */
const pgChannel = (channel: string) => `hoist_${channel}`;

/**
 * Changes announced between processes with PostgreSQL LISTEN/NOTIFY. Publishing uses a small pool;
 * listening holds one dedicated connection that is opened again when it drops, after which every
 * listener is called with null (notifications sent meanwhile are lost: reload everything). This
 * process's own listeners are called at once (and awaited) by `publish` itself, as changes-memory does, so
 * the write's caller answers only once this process's views are current; the notification, which
 * names its sender, is for the other processes.
 */
export class PostgresChangeFeed implements ChangeFeed {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly pool: pg.Pool;
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;
  private readonly id = randomUUID();

  constructor(private readonly options: PostgresChangeFeedOptions) {
    this.pool = new pg.Pool({ connectionString: options.url, max: 2, idleTimeoutMillis: 10_000 });
    // An idle pooled connection that drops emits here; the next query opens another.
    this.pool.on('error', () => {});
  }

  /** Opens the listening connection, so a start fails when the database does not answer. */
  async start(): Promise<void> {
    await this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    await this.connecting?.catch(() => {});
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
    await this.pool.end().catch(() => {});
  }

  /** The listening connection answers. */
  async check(): Promise<void> {
    if (!this.client) throw new Error('changes: not listening (reconnecting to PostgreSQL)');
    await this.client.query('select 1');
  }

  async publish(channel: string, key: string): Promise<void> {
    if (!CHANNEL.test(channel)) throw new Error(`changes: bad channel ${JSON.stringify(channel)}`);
    // This process's listeners first: what it keeps is current from the write's own continuation on, not one
    // round trip of the notification later.
    const handled = Promise.allSettled(this.call(channel, key));
    await this.pool.query('select pg_notify($1, $2)', [pgChannel(channel), `${this.id} ${key}`]);
    await handled;
  }

  subscribe(channel: string, listener: Listener): () => void {
    if (!CHANNEL.test(channel)) throw new Error(`changes: bad channel ${JSON.stringify(channel)}`);
    let set = this.listeners.get(channel);
    if (!set) {
      set = new Set();
      this.listeners.set(channel, set);
      this.client?.query(`listen ${pgChannel(channel)}`).catch((err: Error) => this.lost(err));
    }
    set.add(listener);
    return () => void set.delete(listener);
  }

  private connect(): Promise<void> {
    this.connecting ??= this.open().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async open(): Promise<void> {
    const client = new pg.Client({ connectionString: this.options.url });
    client.on('error', (err) => this.lost(err, client));
    client.on('end', () => this.lost(new Error('connection ended'), client));
    client.on('notification', (n) => {
      const channel = n.channel.startsWith('hoist_') ? n.channel.slice('hoist_'.length) : null;
      const payload = n.payload ?? '';
      const space = payload.indexOf(' ');
      // Our own announcements reached this process's listeners when they were published.
      if (channel !== null && space > 0 && payload.slice(0, space) !== this.id)
        void this.call(channel, payload.slice(space + 1));
    });
    await client.connect();
    if (this.stopped) {
      await client.end().catch(() => {});
      return;
    }
    // Set first: a channel subscribed while the LISTENs below run issues its own.
    this.client = client;
    for (const channel of this.listeners.keys()) await client.query(`listen ${pgChannel(channel)}`);
  }

  private lost(err: Error, client?: pg.Client): void {
    if (this.stopped || (client && client !== this.client)) return;
    const dead = this.client;
    this.client = null;
    dead?.removeAllListeners('end');
    void dead?.end().catch(() => {});
    if (this.retry) return;
    this.options.warn({ reason: err.message }, 'changes: lost the PostgreSQL listening connection; reconnecting');
    const again = () => {
      this.retry = null;
      if (this.stopped) return;
      this.connect().then(
        () => {
          // Whatever was announced while no connection listened is lost: every listener reloads.
          for (const channel of this.listeners.keys()) this.call(channel, null);
        },
        () => (this.retry = setTimeout(again, this.options.retryMs ?? 1000)),
      );
    };
    this.retry = setTimeout(again, this.options.retryMs ?? 1000);
  }

  private call(channel: string, key: string | null): unknown[] {
    const handled: unknown[] = [];
    for (const listener of this.listeners.get(channel) ?? []) {
      try {
        handled.push(listener(key));
      } catch {
        // A listener's failure is its own.
      }
    }
    return handled;
  }
}
