import type { HoistConfig } from '../../config/schema.js';

interface Entry<T> {
  value: T;
  /** What the value was read from: a drop of any of them drops the entry. */
  tags: readonly string[];
  /** Epoch ms after which the entry is not used. */
  until: number;
}

/**
 * Answers this process keeps in memory, each under a key and tagged with what it was read from (`user:<id>`,
 * `project:<id>`...), so that a change announced on the change feed drops exactly the entries it names. Bounded in
 * size (least recently used dropped first) and in time (`ttlMs` per entry, which bounds what a lost announcement
 * costs). A read that raced with a drop is never stored (see `epoch`).
 */
export class TaggedCache<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly byTag = new Map<string, Set<string>>();
  private generation = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
  ) {}

  /** How many entries are cached. */
  get size(): number {
    return this.entries.size;
  }

  /**
   * A number that changes on every drop: take it before reading what a value is made of, and hand it to `put`,
   * which stores nothing when a drop came in between (the read may predate the change it announced).
   */
  get epoch(): number {
    return this.generation;
  }

  /** The value under `key` when cached and still valid at `now` (epoch ms), else undefined. */
  get(key: string, now: number): T | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until <= now) {
      this.remove(key, entry);
      return undefined;
    }
    // Most recently used last: Map keeps insertion order.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /**
   * Caches `value` under `key`, tagged `tags`, until `expiresAt` (epoch ms) or the cache's bound, unless a drop
   * happened since `epoch`.
   */
  put(key: string, value: T, tags: readonly string[], now: number, epoch: number, expiresAt = Infinity): void {
    if (this.maxEntries === 0 || epoch !== this.generation) return;
    const old = this.entries.get(key);
    if (old) this.remove(key, old);
    this.entries.set(key, { value, tags, until: Math.min(expiresAt, now + this.ttlMs) });
    for (const tag of tags) {
      const keys = this.byTag.get(tag) ?? new Set<string>();
      this.byTag.set(tag, keys);
      keys.add(key);
    }
    while (this.entries.size > this.maxEntries) {
      const [oldest, entry] = this.entries.entries().next().value as [string, Entry<T>];
      this.remove(oldest, entry);
    }
  }

  /** Drops every entry tagged `tag`; null drops everything. */
  drop(tag: string | null): void {
    this.generation++;
    if (tag === null) {
      this.entries.clear();
      this.byTag.clear();
      return;
    }
    for (const key of [...(this.byTag.get(tag) ?? [])]) this.remove(key, this.entries.get(key)!);
  }

  private remove(key: string, entry: Entry<T>): void {
    this.entries.delete(key);
    for (const tag of entry.tags) {
      const keys = this.byTag.get(tag);
      keys?.delete(key);
      if (keys?.size === 0) this.byTag.delete(tag);
    }
  }
}

/** How many answers of one kind an API process keeps (least recently used dropped first). */
const ANSWER_CACHE_SIZE = 10_000;

/**
 * A cache of the API's answers that may repeat (`GET /me`, a finished operation's view): each is dropped by the
 * write that changes it, announced on the change feed, and kept `answerCacheSeconds` at most (0: nothing is kept).
 */
export function answerCache<T>(config: Pick<HoistConfig, 'answerCacheSeconds'>): TaggedCache<T> {
  const seconds = config.answerCacheSeconds;
  return new TaggedCache<T>(seconds > 0 ? ANSWER_CACHE_SIZE : 0, seconds * 1000);
}
