import type { Principal } from './principal.js';

/** The change-feed channel that carries session revocations between processes. */
export const SESSIONS_CHANNEL = 'sessions';

/** The change-feed key of one revoked session. */
export const sessionKey = (sessionId: string) => `session:${sessionId}`;
/** The change-feed key of a user whose every session was revoked. */
export const userKey = (userId: string) => `user:${userId}`;

interface Entry {
  principal: Principal;
  /** Epoch ms after which the entry is not used: the token's or session's end, or the cache's own bound. */
  until: number;
}

/**
 * Verified REST tokens of this process, so that a request skips the signature check and the session and
 * user lookups. Bounded in size (least recently used dropped first) and in time (`ttlMs` per entry).
 * Every revocation drops what it names, by session or by user, before the revoking request answers;
 * `drop(null)` drops everything. A lookup that raced with a revocation is never stored (see `epoch`).
 */
export class SessionCache {
  private readonly entries = new Map<string, Entry>();
  private readonly bySession = new Map<string, Set<string>>();
  private readonly byUser = new Map<string, Set<string>>();
  private generation = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
  ) {}

  /** How many tokens are cached. */
  get size(): number {
    return this.entries.size;
  }

  /**
   * A number that changes on every drop: take it before reading the session, and hand it to `put`,
   * which stores nothing when a revocation came in between.
   */
  get epoch(): number {
    return this.generation;
  }

  /** The principal of `token` when cached and still valid at `now` (epoch ms), else undefined. */
  get(token: string, now: number): Principal | undefined {
    const entry = this.entries.get(token);
    if (!entry) return undefined;
    if (entry.until <= now) {
      this.remove(token, entry);
      return undefined;
    }
    // Most recently used last: Map keeps insertion order.
    this.entries.delete(token);
    this.entries.set(token, entry);
    return entry.principal;
  }

  /** Caches `token` until `expiresAt` (epoch ms) or the cache's bound, unless a drop happened since `epoch`. */
  put(token: string, principal: Principal, expiresAt: number, now: number, epoch: number): void {
    if (this.maxEntries === 0 || epoch !== this.generation) return;
    const old = this.entries.get(token);
    if (old) this.remove(token, old);
    this.entries.set(token, { principal, until: Math.min(expiresAt, now + this.ttlMs) });
    index(this.bySession, principal.sessionId, token);
    index(this.byUser, principal.userId, token);
    while (this.entries.size > this.maxEntries) {
      const [oldest, entry] = this.entries.entries().next().value as [string, Entry];
      this.remove(oldest, entry);
    }
  }

  /** Drops what a change-feed key names (`session:<id>`, `user:<id>`); null or any other key drops everything. */
  drop(key: string | null): void {
    this.generation++;
    const [kind, id] = key ? [key.slice(0, key.indexOf(':')), key.slice(key.indexOf(':') + 1)] : ['', ''];
    const tokens = kind === 'session' ? this.bySession.get(id) : kind === 'user' ? this.byUser.get(id) : undefined;
    if (kind === 'session' || kind === 'user') {
      for (const token of [...(tokens ?? [])]) this.remove(token, this.entries.get(token)!);
      return;
    }
    this.entries.clear();
    this.bySession.clear();
    this.byUser.clear();
  }

  private remove(token: string, entry: Entry): void {
    this.entries.delete(token);
    unindex(this.bySession, entry.principal.sessionId, token);
    unindex(this.byUser, entry.principal.userId, token);
  }
}

function index(map: Map<string, Set<string>>, key: string, token: string): void {
  const set = map.get(key) ?? new Set<string>();
  map.set(key, set);
  set.add(token);
}

function unindex(map: Map<string, Set<string>>, key: string, token: string): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(token);
  if (set.size === 0) map.delete(key);
}
