import type { EntityManager } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { User } from '../entities/user.js';
import { invalid, notFound, unauthorized } from '../errors.js';
import type { TokenService } from '../ports/token-service.js';
import { normalizeEmail } from './auth-service.js';
import type { Principal } from './principal.js';
import { token } from '../tokens.js';

export const AGENT_AUTH_SERVICE = token<AgentAuthService>('hoist.AgentAuthService');

/** Default and bounds of an agent token's lifetime, in seconds. */
export const AGENT_TTL = { default: 3600, min: 60, max: 30 * 24 * 3600 } as const;

/**
 * Access tokens of the agent-tool interface: a token kind of their own (own audience and type), so
 * they are never valid as REST bearer tokens, and REST tokens are never valid here.
 */
export class AgentAuthService {
  constructor(
    private readonly em: EntityManager,
    private readonly tokens: TokenService,
  ) {}

  /** Signs an agent token for the user with `email` (admin CLI); each carries a fresh grant id as `jti`. */
  async mint(
    email: string,
    ttlSeconds: number = AGENT_TTL.default,
  ): Promise<{ token: string; expires_at: string; user: { id: string; email: string } }> {
    if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds < AGENT_TTL.min || ttlSeconds > AGENT_TTL.max) {
      throw invalid(`ttl must be an integer from ${AGENT_TTL.min} to ${AGENT_TTL.max} seconds`, { field: 'ttl' });
    }
    const user = await this.em.findOne(User, { email: normalizeEmail(email) });
    if (!user) throw notFound(`User ${email}`);
    const { token, expiresAt } = await this.tokens.sign('agent', user.id, randomUUID(), ttlSeconds);
    return { token, expires_at: expiresAt.toISOString(), user: { id: user.id, email: user.email } };
  }

  /** Verifies an agent token; throws unauthorized for anything else, REST tokens included. */
  async authenticate(token: string): Promise<Principal> {
    const claims = await this.tokens.verify('agent', token);
    if (!claims) throw unauthorized();
    const user = await this.em.findOne(User, { id: claims.sub });
    if (!user) throw unauthorized();
    return { userId: user.id, accountId: user.accountId, email: user.email, sessionId: claims.jti };
  }
}
