import { HoistNetworkError } from './errors.js';
import { DEFAULT_RETRY, isSafeToRepeat, retryDelay, type RetryPolicy } from './retry-policy.js';

export interface RetryOptions {
  policy?: RetryPolicy;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Sends the request `make` builds (a fresh one per attempt, so bodies can be sent again), retrying
 * as `retryDelay` decides. Throws HoistNetworkError, naming the URL, when no attempt got an answer;
 * otherwise returns the last answer, error statuses included.
 */
export async function sendWithRetries(make: () => Request, options: RetryOptions = {}): Promise<Response> {
  const policy = options.policy ?? DEFAULT_RETRY;
  const send = options.fetch ?? fetch;
  const wait = options.sleep ?? sleep;
  for (let attempt = 0; ; attempt++) {
    const req = make();
    const safe = isSafeToRepeat(req.method, req.headers);
    let res: Response;
    try {
      res = await send(req);
    } catch (err) {
      if ((err as Error)?.name === 'AbortError') throw err;
      const delay = retryDelay({ networkError: true }, attempt, safe, policy, options.random);
      if (delay === null) throw new HoistNetworkError(new URL(req.url).origin, err);
      await wait(delay);
      continue;
    }
    const delay = res.ok
      ? null
      : retryDelay(
          { status: res.status, retryAfter: res.headers.get('retry-after') },
          attempt,
          safe,
          policy,
          options.random,
        );
    if (delay === null) return res;
    await res.body?.cancel().catch(() => {});
    await wait(delay);
  }
}
