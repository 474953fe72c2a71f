import { raw, UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { RateBucket } from '../entities/rate-bucket.js';
import { HoistError } from '../errors.js';
import type { Clock } from '../ports/clock.js';

/** A key's count in the current window and the whole seconds until that window ends. */
export interface RateCount {
  count: number;
  retryAfter: number;
}

/** The error for a caller over a limit; the HTTP edge turns `retry_after` into a Retry-After header. */
export const rateLimited = (message: string, retryAfter: number) => new HoistError('rate_limited', message, { retry_after: retryAfter });

/**
 * Fixed-window counters kept in `rate_buckets`, so every API process sharing the database counts
 * together. Each change is one conditional statement, so concurrent hits are never lost.
 */
export class RateLimiter {
  constructor(
    private readonly em: EntityManager,
    private readonly clock: Clock,
  ) {}

  /** Counts one attempt against `key` in the current window of `windowSeconds`. */
  async hit(key: string, windowSeconds: number): Promise<RateCount> {
    const { start } = this.window(windowSeconds);
    for (;;) {
      if (await this.em.nativeUpdate(RateBucket, { key, windowStart: start }, { count: raw('"count" + 1') })) break;
      // The bucket is from an older window: only one process wins the reset, the others retry the increment.
      if (await this.em.nativeUpdate(RateBucket, { key, windowStart: { $lt: start } }, { windowStart: start, count: 1 })) break;
      try {
        await this.em.insert(RateBucket, { key, windowStart: start, count: 1 });
        // A new key is the rare path: drop buckets nobody has touched for a day.
        await this.em.nativeDelete(RateBucket, { windowStart: { $lt: new Date(start.getTime() - Math.max(windowSeconds, 86400) * 1000) } });
        break;
      } catch (err) {
        if (!(err instanceof UniqueConstraintViolationException)) throw err;
      }
    }
    return this.peek(key, windowSeconds);
  }

  /** The count of `key` in the current window, without counting. */
  async peek(key: string, windowSeconds: number): Promise<RateCount> {
    const { start, retryAfter } = this.window(windowSeconds);
    const bucket = await this.em.findOne(RateBucket, { key }, { disableIdentityMap: true });
    return { count: bucket && bucket.windowStart.getTime() === start.getTime() ? bucket.count : 0, retryAfter };
  }

  /** Forgets `key` (a successful login clears its failures). */
  async clear(key: string): Promise<void> {
    await this.em.nativeDelete(RateBucket, { key });
  }

  private window(windowSeconds: number): { start: Date; retryAfter: number } {
    const now = this.clock.now().getTime();
    const size = windowSeconds * 1000;
    const start = Math.floor(now / size) * size;
    return { start: new Date(start), retryAfter: Math.max(1, Math.ceil((start + size - now) / 1000)) };
  }
}
