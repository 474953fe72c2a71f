import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { HoistConfig } from '../../config/schema.js';
import { HoistError } from '../../core/errors.js';
import { addressKey } from '../../core/auth/address-key.js';

/** The window the request limit counts in. */
const WINDOW_MS = 60_000;

/**
 * Limits the requests of each account (any of its tokens, every member's) to `apiRequestsPerMinute` a minute on this
 * process, and those without a token by client address (an IPv6 /64), with @fastify/rate-limit: every answer says
 * how many are left (`x-ratelimit-limit`, `-remaining`, `-reset`), and one past the limit is 429 `rate_limited` with
 * `Retry-After`, before its body is read or its handler runs. It applies to the routes registered after it (not to the
 * health routes, the OpenAPI document or its pages), and runs after their own authentication, which names the account;
 * a request its authentication refuses is counted against its address all the same (refusedCounter).
 */
export async function limitRequests(app: FastifyInstance, config: HoistConfig): Promise<void> {
  if (!config.apiRequestsPerMinute) return;
  await app.register(rateLimit, {
    max: config.apiRequestsPerMinute,
    timeWindow: WINDOW_MS,
    hook: 'onRequest',
    // Accounts and addresses remembered at once (least recently used go first).
    cache: 20_000,
    keyGenerator: (req: FastifyRequest) =>
      req.principal ? `account:${req.principal.accountId}` : `address:${addressKey(req.ip)}`,
    errorResponseBuilder: (req, context) => {
      const who = req.principal ? 'this account' : 'this address';
      return new HoistError(
        'rate_limited',
        `Too many requests: ${context.max} a minute are allowed for ${who}; retry in ${context.after}`,
        {
          limit: context.max,
          window_seconds: WINDOW_MS / 1000,
          retry_after: Math.max(1, Math.ceil(context.ttl / 1000)),
        },
      );
    },
  });
}

/**
 * Counts a request refused for its token against its client address, as one without a token (the request limit runs
 * after authentication names the account, so a refused one never reaches it); past the limit it throws the limit's
 * 429. Undefined when requests are not limited. Only after `limitRequests`.
 */
export const refusedCounter = (
  app: FastifyInstance,
  config: HoistConfig,
): ((req: FastifyRequest, reply: FastifyReply) => Promise<unknown>) | undefined =>
  config.apiRequestsPerMinute ? app.rateLimit() : undefined;
