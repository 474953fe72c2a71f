import { createHash } from 'node:crypto';
import type { HoistConfig } from '../../config/schema.js';
import { addressKey } from './address-key.js';
import { normalizeEmail } from './auth-service.js';
import { rateLimited, type RateLimiter } from './rate-limiter.js';

/**
 * Counts one request of `kind` (password recovery, access request) that may mail or store
 * something for `email`, in sliding windows of `mailWindowSeconds`: past `mailMaxPerAddress` from
 * the client's address (an IPv6 one's /64) it throws rate_limited (that says nothing about the e-mail); past
 * `mailMaxPerRecipient` for the e-mail, known or not, it answers false: the caller then sends and
 * stores nothing and answers as it does for every e-mail. The e-mail is kept only as a hash.
 */
export async function mailAllowed(
  limiter: RateLimiter,
  config: Pick<HoistConfig, 'mailMaxPerAddress' | 'mailMaxPerRecipient' | 'mailWindowSeconds'>,
  kind: string,
  email: string,
  address: string | undefined,
): Promise<boolean> {
  if (address) {
    const from = await limiter.hit(
      `mail:${kind}:from:${addressKey(address)}`,
      config.mailMaxPerAddress,
      config.mailWindowSeconds,
    );
    if (!from.allowed) throw rateLimited('Too many requests from this address; try again later', from.retryAfter);
  }
  const to = createHash('sha256').update(normalizeEmail(email)).digest('hex');
  return (await limiter.hit(`mail:${kind}:to:${to}`, config.mailMaxPerRecipient, config.mailWindowSeconds)).allowed;
}
