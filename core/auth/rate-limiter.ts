import type { EntityManager } from '@mikro-orm/core';
import { RateHit } from '../entities/rate-hit.js';
import { HoistError } from '../errors.js';
import type { Clock } from '../ports/clock.js';

/** What one hit got: whether it was within the limit, the hits now in the window, and when to come back. */
export interface RateDecision {
  allowed: boolean;
  /** Accepted hits of the key in the window, this one included when it was allowed. */
  count: number;
  /** Whole seconds until the next hit would be allowed (0 when this one was). */
  retryAfter: number;
}

/**
 * The error for a caller over a limit, with `details` beside `retry_after`; the HTTP edge turns `retry_after` into a
 * Retry-After header.
 */
export const rateLimited = (message: string, retryAfter: number, details: Record<string, unknown> = {}) =>
  new HoistError('rate_limited', message, { ...details, retry_after: retryAfter });

/** Hits kept at least this long, whatever the window, before anyone's hit may sweep them away. */
const KEEP_MS = 24 * 3600 * 1000;

/**
 * Sliding-window limits kept in `rate_hits`, so every process sharing the database counts
 * together: at most `limit` accepted hits of a key in any `windowSeconds`, wherever the window
 * falls (fixed windows let twice the limit through across their edge). A hit is written first and
 * then counted, so concurrent hits are never lost and never let more than `limit` through (at the
 * limit, concurrent ones may all be refused); one over the limit is removed again and not
 * counted, so a caller who keeps knocking waits for the window to slide, not longer, and a key
 * never holds more than `limit` rows in its window.
 */
export class RateLimiter {
  constructor(
    private readonly em: EntityManager,
    private readonly clock: Clock,
  ) {}

  /** The same limits, kept through `em` (a fork: see SiteAccessService.on). */
  on(em: EntityManager): RateLimiter {
    return new RateLimiter(em, this.clock);
  }

  /** Counts one hit of `key` unless `limit` hits are already in the last `windowSeconds`. */
  async hit(key: string, limit: number, windowSeconds: number): Promise<RateDecision> {
    const now = this.clock.now();
    const since = new Date(now.getTime() - windowSeconds * 1000);
    const row = Object.assign(new RateHit(), { key, at: now });
    await this.em.insert(RateHit, row);
    const count = await this.em.count(RateHit, { key, at: { $gt: since } });
    if (count <= limit) {
      // The key's expired hits go as it is used; a key's first hit also sweeps keys nobody uses any more.
      await this.em.nativeDelete(RateHit, { key, at: { $lte: since } });
      if (count === 1)
        await this.em.nativeDelete(RateHit, {
          at: { $lt: new Date(now.getTime() - Math.max(windowSeconds * 1000, KEEP_MS)) },
        });
      return { allowed: true, count, retryAfter: 0 };
    }
    await this.em.nativeDelete(RateHit, { id: row.id });
    // The next hit fits once all but limit - 1 of the others have left the window.
    const kept = count - 1;
    const [freeing] = await this.em.find(
      RateHit,
      { key, at: { $gt: since } },
      { fields: ['at'], orderBy: { at: 'asc', id: 'asc' }, offset: kept - limit, limit: 1, disableIdentityMap: true },
    );
    const ms = freeing ? freeing.at.getTime() + windowSeconds * 1000 - now.getTime() : 1000;
    return { allowed: false, count: kept, retryAfter: Math.max(1, Math.ceil(ms / 1000)) };
  }

  /** The accepted hits of `key` in the last `windowSeconds`, without counting one. */
  async count(key: string, windowSeconds: number): Promise<number> {
    return this.em.count(RateHit, { key, at: { $gt: new Date(this.clock.now().getTime() - windowSeconds * 1000) } });
  }

  /** Forgets `key` (a successful login clears its failures). */
  async clear(key: string): Promise<void> {
    await this.em.nativeDelete(RateHit, { key });
  }
}
