import type { EntityManager } from '@mikro-orm/core';
import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HoistConfig } from '../../config/schema.js';
import { Session } from '../entities/session.js';
import { User } from '../entities/user.js';
import { HoistError, unauthorized } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { PasswordHasher } from '../ports/password-hasher.js';
import type { TokenService } from '../ports/token-service.js';
import type { Principal } from './principal.js';
import { rateLimited, type RateLimiter } from './rate-limiter.js';
import { addressKey } from './address-key.js';
import { principalTags, sessionKey } from './session-cache.js';
import type { SessionRevocations } from './session-revocations.js';
import { token } from '../tokens.js';

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

export const AUTH_SERVICE = token<AuthService>('hoist.AuthService');

/**
 * Each failed login of an e-mail (all addresses together) past loginMaxPerAccount slows its next attempts by this
 * much...
 */
export const LOGIN_SLOWDOWN_STEP_MS = 250;
/** ...up to this long. */
export const LOGIN_SLOWDOWN_MAX_MS = 3000;

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
    private readonly revocations: SessionRevocations,
  ) {}

  /**
   * Exchanges e-mail and password for a REST token; the same 401 for an unknown e-mail and a wrong
   * password. Guessing is limited in sliding windows of `loginWindowSeconds`, so that an attacker
   * cannot lock the owner out (see README, "Login limits"):
   *
   * - per client address: `loginMaxPerAddress` attempts, whatever the e-mail (429 past it);
   * - per e-mail and client address: `loginMaxPerAccount` attempts not followed by a success
   *   (429 past it, even for the right password, for that address only; a success clears them);
   * - per e-mail, from every address together: failures past `loginMaxPerAccount` only slow every
   *   further attempt down (LOGIN_SLOWDOWN_STEP_MS each, up to LOGIN_SLOWDOWN_MAX_MS), and not at all
   *   from an address the user has logged in from before. They never refuse the right password.
   *
   * Unknown e-mails are counted the same way, so the limits tell nothing about who has an account.
   */
  async login(email: string, password: string, client: ClientInfo = {}): Promise<LoginResult> {
    return this.issue(await this.checkCredentials(email, password, client), client);
  }

  /**
   * The user whose e-mail and password these are, under the limits `login` describes (every form of login uses it:
   * REST and an agent's OAuth consent). Throws unauthorized (the same for an unknown e-mail and a wrong password) or
   * rate_limited.
   */
  async checkCredentials(email: string, password: string, client: ClientInfo = {}): Promise<User> {
    const { loginWindowSeconds: window, loginMaxPerAddress, loginMaxPerAccount } = this.config;
    // Counted per addressKey: an IPv6 client holds a whole /64, so each of its addresses is not a new guesser.
    const address = client.address ? addressKey(client.address) : 'unknown';
    if (client.address) {
      const byAddress = await this.limiter.hit(`login:address:${address}`, loginMaxPerAddress, window);
      if (!byAddress.allowed)
        throw rateLimited('Too many login attempts from this address; try again later', byAddress.retryAfter);
    }
    // Counted before the password is checked, so concurrent guesses cannot slip past the limit; the
    // keys hold a hash, so typed-in secrets never sit in the table.
    const who = createHash('sha256').update(normalizeEmail(email)).digest('hex');
    const pairKey = `login:account-address:${who}:${address}`;
    const pair = await this.limiter.hit(pairKey, loginMaxPerAccount, window);
    if (!pair.allowed)
      throw rateLimited('Too many failed logins for this account from this address; try again later', pair.retryAfter);

    const user = await this.em.findOne(User, { email: normalizeEmail(email) });
    const accountKey = `login:account:${who}`;
    const excess = (await this.limiter.count(accountKey, window)) - loginMaxPerAccount;
    if (
      excess > 0 &&
      !(
        user &&
        client.address &&
        (await this.em.count(Session, { userId: user.id, address: client.address.slice(0, 64) }))
      )
    ) {
      await sleep(Math.min(LOGIN_SLOWDOWN_MAX_MS, excess * LOGIN_SLOWDOWN_STEP_MS));
    }
    this.dummyHash ??= this.hasher.hash(randomUUID());
    const ok = await this.hasher.verify(user?.passwordHash ?? (await this.dummyHash), password);
    if (!user || !user.passwordHash || !ok) {
      // Kept only up to where the slowdown is at its longest: beyond, more rows change nothing.
      await this.limiter.hit(
        accountKey,
        loginMaxPerAccount + Math.ceil(LOGIN_SLOWDOWN_MAX_MS / LOGIN_SLOWDOWN_STEP_MS),
        window,
      );
      throw new HoistError('unauthorized', 'Invalid e-mail or password');
    }
    await this.limiter.clear(pairKey);
    return user;
  }

  /** Starts a session for `user` and signs its token. */
  async issue(user: User, client: ClientInfo = {}): Promise<LoginResult> {
    const ttl = this.config.tokenTtlSeconds;
    const now = this.clock.now();
    const session = Object.assign(new Session(), {
      userId: user.id,
      createdAt: now,
      expiresAt: new Date(now.getTime() + ttl * 1000),
      address: client.address?.slice(0, 64) ?? null,
      userAgent: client.userAgent?.slice(0, 512) ?? null,
    });
    const { token, expiresAt } = await this.tokens.sign('rest', user.id, session.id, ttl);
    session.expiresAt = expiresAt;
    await this.em.persist(session).flush();
    return { token, expires_at: expiresAt.toISOString(), user: { id: user.id, email: user.email } };
  }

  /**
   * The principal of a token verified before, from this process's cache (until the token expires, its session is
   * revoked or `authCacheSeconds` pass); undefined when `authenticate` must verify it.
   */
  known(token: string): Principal | undefined {
    return this.revocations.cache.get(token, this.clock.now().getTime());
  }

  /**
   * Verifies a REST bearer token and its session; throws 401 for anything else (agent tokens included).
   * A token verified before is answered from this process's cache (see `known`).
   */
  async authenticate(token: string): Promise<Principal> {
    const { cache } = this.revocations;
    const cached = this.known(token);
    if (cached) return cached;
    // Taken before the session is read: a revocation committed meanwhile keeps this answer out of the cache.
    const epoch = cache.epoch;
    const claims = await this.tokens.verify('rest', token);
    if (!claims) throw unauthorized();
    const session = await this.em.findOne(Session, { id: claims.jti, userId: claims.sub });
    const now = this.clock.now();
    if (!session || session.revokedAt || session.expiresAt <= now) throw unauthorized();
    const user = await this.em.findOne(User, { id: claims.sub });
    if (!user) throw unauthorized();
    const principal = { userId: user.id, accountId: user.accountId, email: user.email, sessionId: session.id };
    const until = Math.min(session.expiresAt.getTime(), claims.expiresAt.getTime());
    cache.put(token, principal, principalTags(principal), now.getTime(), epoch, until);
    return principal;
  }

  /** Revokes the session the principal came with; its token is refused from then on, by every process. */
  async logout(principal: Principal): Promise<void> {
    await this.em.nativeUpdate(Session, { id: principal.sessionId, revokedAt: null }, { revokedAt: this.clock.now() });
    await this.revocations.revoked(sessionKey(principal.sessionId));
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
