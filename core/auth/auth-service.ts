import type { EntityManager } from '@mikro-orm/core';
import { createHash, randomUUID } from 'node:crypto';
import type { HoistConfig } from '../../config/schema.js';
import { Session } from '../entities/session.js';
import { User } from '../entities/user.js';
import { HoistError, unauthorized } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { PasswordHasher } from '../ports/password-hasher.js';
import type { TokenService } from '../ports/token-service.js';
import type { Principal } from './principal.js';
import { rateLimited, type RateLimiter } from './rate-limiter.js';

/** The result of a successful login, as the spec shapes it. */
export interface LoginResult {
  token: string;
  expires_at: string;
  user: { id: string; email: string };
}

/** An active session as `GET /auth/sessions` lists it. */
export interface SessionView {
  id: string;
  created_at: string;
  expires_at: string;
  address: string | null;
  user_agent: string | null;
  /** True for the session the request came with. */
  current: boolean;
}

/** Client facts recorded on a session. */
export interface ClientInfo {
  address?: string;
  userAgent?: string;
}

export const AUTH_SERVICE = Symbol.for('hoist.AuthService');

/** Logs users in, verifies their bearer tokens and manages their sessions. */
export class AuthService {
  // A valid hash of a random password, verified when the e-mail is unknown so both paths cost the same.
  private dummyHash: Promise<string> | undefined;

  constructor(
    private readonly em: EntityManager,
    private readonly hasher: PasswordHasher,
    private readonly tokens: TokenService,
    private readonly clock: Clock,
    private readonly config: HoistConfig,
    private readonly limiter: RateLimiter,
  ) {}

  /**
   * Exchanges e-mail and password for a REST token; the same 401 for an unknown e-mail and a wrong
   * password. Throws rate_limited (with `retry_after`) past `loginMaxPerAddress` attempts from the
   * client's address or `loginMaxPerAccount` failed attempts for the e-mail in one window; a
   * successful login clears the e-mail's failures.
   */
  async login(email: string, password: string, client: ClientInfo = {}): Promise<LoginResult> {
    const { loginWindowSeconds: window, loginMaxPerAddress, loginMaxPerAccount } = this.config;
    if (client.address) {
      const byAddress = await this.limiter.hit(`login:address:${client.address}`, window);
      if (byAddress.count > loginMaxPerAddress) throw rateLimited('Too many login attempts from this address; try again later', byAddress.retryAfter);
    }
    // Counted before the password is checked, so concurrent guesses cannot slip past the limit; the
    // key is a hash so typed-in secrets never sit in the table. Unknown e-mails count the same way.
    const accountKey = `login:account:${createHash('sha256').update(normalizeEmail(email)).digest('hex')}`;
    const failures = await this.limiter.hit(accountKey, window);
    if (failures.count > loginMaxPerAccount) throw rateLimited('Too many failed logins for this account; try again later', failures.retryAfter);

    const user = await this.em.findOne(User, { email: normalizeEmail(email) });
    this.dummyHash ??= this.hasher.hash(randomUUID());
    const ok = await this.hasher.verify(user?.passwordHash ?? (await this.dummyHash), password);
    if (!user || !user.passwordHash || !ok) throw new HoistError('unauthorized', 'Invalid e-mail or password');
    await this.limiter.clear(accountKey);
    return this.issue(user, client);
  }

  /** Starts a session for `user` and signs its token. */
  async issue(user: User, client: ClientInfo = {}): Promise<LoginResult> {
    const ttl = this.config.tokenTtlSeconds;
    const session = Object.assign(new Session(), {
      userId: user.id,
      expiresAt: new Date(this.clock.now().getTime() + ttl * 1000),
      address: client.address?.slice(0, 64) ?? null,
      userAgent: client.userAgent?.slice(0, 512) ?? null,
    });
    const { token, expiresAt } = await this.tokens.sign('rest', user.id, session.id, ttl);
    session.expiresAt = expiresAt;
    await this.em.persist(session).flush();
    return { token, expires_at: expiresAt.toISOString(), user: { id: user.id, email: user.email } };
  }

  /** Verifies a REST bearer token and its session; throws 401 for anything else (agent tokens included). */
  async authenticate(token: string): Promise<Principal> {
    const claims = await this.tokens.verify('rest', token);
    if (!claims) throw unauthorized();
    const session = await this.em.findOne(Session, { id: claims.jti, userId: claims.sub });
    if (!session || session.revokedAt || session.expiresAt <= this.clock.now()) throw unauthorized();
    const user = await this.em.findOne(User, { id: claims.sub });
    if (!user) throw unauthorized();
    return { userId: user.id, accountId: user.accountId, email: user.email, sessionId: session.id };
  }

  /** Revokes the session the principal came with; its token is refused from then on. */
  async logout(principal: Principal): Promise<void> {
    await this.em.nativeUpdate(Session, { id: principal.sessionId, revokedAt: null }, { revokedAt: this.clock.now() });
  }

  /** The principal's user's sessions that are neither revoked nor expired, newest first. */
  async sessions(principal: Principal): Promise<SessionView[]> {
    const list = await this.em.find(
      Session,
      { userId: principal.userId, revokedAt: null, expiresAt: { $gt: this.clock.now() } },
      { orderBy: { createdAt: 'desc' } },
    );
    return list.map((s) => ({
      id: s.id,
      created_at: s.createdAt.toISOString(),
      expires_at: s.expiresAt.toISOString(),
      address: s.address,
      user_agent: s.userAgent,
      current: s.id === principal.sessionId,
    }));
  }
}

/** E-mail addresses are compared trimmed and lower-cased. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}
