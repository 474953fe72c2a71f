import { token } from '../tokens.js';

/**
 * Tells every Hoist process that something changed, so what it keeps in memory (the edge's routing
 * table, the API's session cache, an operation's event stream) is brought up to date at once instead
 * of on the next periodic check. Plugins: `changes-memory` (this process only: `hoist start`, one
 * machine) and `changes-postgres` (PostgreSQL LISTEN/NOTIFY between processes). A change feed is a
 * hint, never the record: a listener reads the database for what changed, and a periodic
 * revalidation bounds what a lost notification can cost.
 */
export interface ChangeFeed {
  /**
   * Announces a change of `key` (e.g. a project id) on `channel` (e.g. `routes`) to every process,
   * this one included: this process's listeners are called at once, before `publish` returns, so
   * what it keeps is current from the write's own continuation on. Call it after the write
   * committed. Resolves once sent and this process's listeners are done; never throws for a
   * listener's failure.
   */
  publish(channel: string, key: string): Promise<void>;
  /**
   * Calls `listener` with the key of every change announced on `channel` from any process, from now
   * on; with `null` when changes may have been missed (a reconnect), which means "reload everything".
   * Returns a function that stops the calls.
   */
  subscribe(channel: string, listener: (key: string | null) => void): () => void;
}

export const CHANGE_FEED = token<ChangeFeed>('hoist.ChangeFeed');

/** Channels and keys must stay short and plain: PostgreSQL NOTIFY payloads are at most 8000 bytes. */
export const CHANNEL = /^[a-z][a-z0-9_]{0,40}$/;
