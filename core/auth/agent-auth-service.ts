import type { EntityManager } from '@mikro-orm/core';
import { AgentGrant, isPending, type AgentGrantSource } from '../entities/agent-grant.js';
import { User } from '../entities/user.js';
import { underOwnerLock } from '../billing/owner-lock.js';
import { isUuid } from '../projects/keyset-cursor.js';
import { conflict, invalid, notFound, unauthorized } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { TokenService } from '../ports/token-service.js';
import { normalizeEmail } from './auth-service.js';
import type { Principal } from './principal.js';
import { principalTags, sessionKey } from './session-cache.js';
import type { SessionRevocations } from './session-revocations.js';
import { token } from '../tokens.js';
import { rateLimited } from './rate-limiter.js';

export const AGENT_AUTH_SERVICE = token<AgentAuthService>('hoist.AgentAuthService');

/** Default and bounds of an agent token's lifetime, in seconds. */
export const AGENT_TTL = { default: 3600, min: 60, max: 30 * 24 * 3600 } as const;

/** Grants a user may hold at once (active or pending): past it, one must be revoked first. */
export const MAX_AGENT_GRANTS = 50;

/** Grants a user may make in any 24 hours, revoked ones too: each leaves a row for AUTH_RECORD_DAYS. */
export const MAX_AGENT_GRANTS_PER_DAY = 200;

/** An agent grant as `GET /api/v1/auth/agent-tokens` lists it. */
export interface AgentGrantView {
  id: string;
  name: string;
  source: AgentGrantSource;
  created_at: string;
  expires_at: string;
}

/** A grant just made, with its token (shown this once). */
export interface MintedAgentToken extends AgentGrantView {
  token: string;
}

/** The cache key of a verified agent token: apart from REST tokens', which the same cache holds. */
const cacheKey = (token: string) => `agent:${token}`;

/**
 * Access tokens of the agent-tool interface: a token kind of their own (own audience and type), so they are never
 * valid as REST bearer tokens, and REST tokens are never valid here. Each carries the id of its grant (`jti`): a grant
 * is made by the admin CLI, by its user over REST, or through OAuth (oauth-service), and every token of it is refused,
 * on every process, once it is revoked or expired.
 */
export class AgentAuthService {
  constructor(
    private readonly em: EntityManager,
    private readonly tokens: TokenService,
    private readonly clock: Clock,
    private readonly revocations: SessionRevocations,
  ) {}

  /** Makes a grant for the user with `email` and signs its token (admin CLI). Throws invalid_request or not_found. */
  async mint(
    email: string,
    ttlSeconds: number = AGENT_TTL.default,
  ): Promise<MintedAgentToken & { user: { id: string; email: string } }> {
    const user = await this.em.findOne(User, { email: normalizeEmail(email) });
    if (!user) throw notFound(`User ${email}`);
    const minted = await this.grant(user.id, 'admin CLI', 'admin', ttlSeconds);
    return { ...minted, user: { id: user.id, email: user.email } };
  }

  /** Makes a grant for the principal's user, named `name`, and signs its token (REST). */
  async create(principal: Principal, name: unknown, ttlSeconds: number = AGENT_TTL.default): Promise<MintedAgentToken> {
    return this.grant(principal.userId, checkName(name), 'api', ttlSeconds);
  }

  /**
   * Records a grant of `source` for `userId` lasting `ttlSeconds` and signs a token of it as long. Throws
   * invalid_request (ttl) or conflict (the user holds MAX_AGENT_GRANTS).
   */
  private async grant(userId: string, name: string, source: AgentGrantSource, ttl: number): Promise<MintedAgentToken> {
    if (!Number.isSafeInteger(ttl) || ttl < AGENT_TTL.min || ttl > AGENT_TTL.max) {
      throw invalid(`ttl must be an integer from ${AGENT_TTL.min} to ${AGENT_TTL.max} seconds`, { field: 'ttl' });
    }
    const now = this.clock.now();
    const grant = Object.assign(new AgentGrant(), { userId, name, source, createdAt: now, expiresAt: now });
    const { token, expiresAt } = await this.tokens.sign('agent', userId, grant.id, ttl);
    grant.expiresAt = expiresAt;
    await this.record(grant);
    return { ...view(grant), token };
  }

  /**
   * Stores a new grant unless its user holds MAX_AGENT_GRANTS that are neither revoked nor expired (a pending OAuth
   * consent counts for its minutes): throws conflict then; or made MAX_AGENT_GRANTS_PER_DAY in the last 24 hours,
   * whatever became of them: throws rate_limited then. Counted and stored under the user's row lock, so racing
   * requests never get past the bounds.
   */
  async record(grant: AgentGrant): Promise<void> {
    await underOwnerLock(this.em, User, grant.userId, async (tx) => {
      const held = await tx.count(AgentGrant, {
        userId: grant.userId,
        revokedAt: null,
        expiresAt: { $gt: grant.createdAt },
      });
      if (held >= MAX_AGENT_GRANTS) {
        throw conflict(`A user holds at most ${MAX_AGENT_GRANTS} agent tokens; revoke one first`, {
          limit: MAX_AGENT_GRANTS,
        });
      }
      const day = 24 * 3600 * 1000;
      const made = await tx.find(
        AgentGrant,
        { userId: grant.userId, createdAt: { $gt: new Date(grant.createdAt.getTime() - day) } },
        { fields: ['createdAt'], orderBy: { createdAt: 'desc' }, limit: MAX_AGENT_GRANTS_PER_DAY },
      );
      if (made.length >= MAX_AGENT_GRANTS_PER_DAY) {
        // Free again when the oldest of the last MAX_AGENT_GRANTS_PER_DAY is a day old.
        const freeAt = made[made.length - 1].createdAt.getTime() + day;
        throw rateLimited(
          `A user may make at most ${MAX_AGENT_GRANTS_PER_DAY} agent tokens in 24 hours; try again later`,
          Math.max(1, Math.ceil((freeAt - grant.createdAt.getTime()) / 1000)),
          { limit: MAX_AGENT_GRANTS_PER_DAY },
        );
      }
      await tx.persist(grant).flush();
    });
  }

  /** The principal's user's active grants (not pending, revoked or expired), newest first. */
  async list(principal: Principal): Promise<AgentGrantView[]> {
    const rows = await this.em.find(
      AgentGrant,
      {
        userId: principal.userId,
        revokedAt: null,
        expiresAt: { $gt: this.clock.now() },
        $or: [{ codeHash: null }, { refreshGeneration: { $ne: null } }],
      },
      { orderBy: { createdAt: 'desc', id: 'asc' } },
    );
    return rows.map(view);
  }

  /**
   * Revokes one of the principal's user's grants: its tokens (and refresh token) are refused at once, on every
   * process. Throws not_found for a grant of anyone else, or one already revoked.
   */
  async revoke(principal: Principal, id: string): Promise<void> {
    const n = isUuid(id)
      ? await this.em.nativeUpdate(
          AgentGrant,
          { id, userId: principal.userId, revokedAt: null },
          { revokedAt: this.clock.now() },
        )
      : 0;
    if (!n) throw notFound(`Agent token ${id}`);
    await this.revocations.revoked(sessionKey(id));
  }

  /**
   * Verifies an agent token and its grant; throws unauthorized for anything else, REST tokens included. A token
   * verified before is answered from this process's cache, which revocations empty.
   */
  async authenticate(token: string): Promise<Principal> {
    const { cache } = this.revocations;
    const now = this.clock.now();
    const cached = cache.get(cacheKey(token), now.getTime());
    if (cached) return cached;
    // Taken before the grant is read: a revocation committed meanwhile keeps this answer out of the cache.
    const epoch = cache.epoch;
    const claims = await this.tokens.verify('agent', token);
    if (!claims) throw unauthorized();
    const grant = await this.em.findOne(AgentGrant, { id: claims.jti, userId: claims.sub });
    if (!grant || grant.revokedAt || isPending(grant) || grant.expiresAt <= now) throw unauthorized();
    const user = await this.em.findOne(User, { id: claims.sub });
    if (!user) throw unauthorized();
    const principal = { userId: user.id, accountId: user.accountId, email: user.email, sessionId: grant.id };
    const until = Math.min(grant.expiresAt.getTime(), claims.expiresAt.getTime());
    cache.put(cacheKey(token), principal, principalTags(principal), now.getTime(), epoch, until);
    return principal;
  }
}

/** Ends every grant of `userId` (in `em`, a transaction): a password reset or the user's removal. */
export async function revokeAgentGrants(em: EntityManager, userId: string, now: Date): Promise<void> {
  await em.nativeUpdate(AgentGrant, { userId, revokedAt: null }, { revokedAt: now });
}

/**
 * Whether `name` is one a grant may show: 1 to 100 characters (trimmed), no control or format characters (a
 * right-to-left override would reorder what the consent page shows around it).
 */
export const nameAllowed = (name: string): boolean => !!name && name.length <= 100 && !/[\p{Cc}\p{Cf}]/u.test(name);

/** A grant's name, trimmed (nameAllowed). Throws invalid_request (field name). */
export function checkName(name: unknown): string {
  const trimmed = typeof name === 'string' ? name.trim() : '';
  if (!nameAllowed(trimmed)) {
    throw invalid('name must be 1 to 100 characters without control or format characters', { field: 'name' });
  }
  return trimmed;
}

/** How a grant is shown. */
export function view(g: AgentGrant): AgentGrantView {
  return {
    id: g.id,
    name: g.name,
    source: g.source,
    created_at: g.createdAt.toISOString(),
    expires_at: g.expiresAt.toISOString(),
  };
}
