/** Bounds of the client's retries: how many attempts in all, and the backoff's first and largest delay. */
export interface RetryPolicy {
  attempts: number;
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseMs: 300, maxMs: 10_000 };

/** Answers worth trying again: rate limited, and the gateway errors of a proxy in front of the API. */
export const RETRYABLE_STATUSES = [429, 502, 503, 504];

/** True when repeating the request cannot do the work twice: reads, and writes that carry an Idempotency-Key. */
export function isSafeToRepeat(method: string, headers: Headers): boolean {
  const m = method.toUpperCase();
  return m === 'GET' || m === 'HEAD' || headers.has('idempotency-key');
}

/**
 * Exponential backoff with full jitter: a random delay up to base·2^attempt, never over maxMs (attempt counts from 0).
 */
export function backoffMs(attempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(policy.maxMs, policy.baseMs * 2 ** attempt));
}

/** The delay a Retry-After header asks for (seconds or an HTTP date), or null when it has none that parses. */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** What went wrong with one attempt: no answer at all, or an answer with this status and Retry-After. */
export type Outcome = { networkError: true } | { status: number; retryAfter?: string | null };

/**
 * How long to wait before attempt `attempt + 1` of a request, or null to stop: only safe requests,
 * only network errors and RETRYABLE_STATUSES, only while attempts are left; a Retry-After is
 * honoured (but never past maxMs), else the jittered backoff.
 */
export function retryDelay(
  outcome: Outcome,
  attempt: number,
  safe: boolean,
  policy: RetryPolicy,
  random: () => number = Math.random,
  now = Date.now(),
): number | null {
  if (!safe || attempt + 1 >= policy.attempts) return null;
  if ('status' in outcome) {
    if (!RETRYABLE_STATUSES.includes(outcome.status)) return null;
    const asked = retryAfterMs(outcome.retryAfter ?? null, now);
    if (asked !== null) return Math.min(asked, policy.maxMs);
  }
  return backoffMs(attempt, policy, random);
}
