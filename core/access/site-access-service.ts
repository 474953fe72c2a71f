import { addressKey } from '../auth/address-key.js';
import { raw, type EntityManager } from '@mikro-orm/core';
import { createHash, randomInt, randomUUID, timingSafeEqual } from 'node:crypto';
import type { HoistConfig } from '../../config/schema.js';
import { isEmail } from '../accounts/account-service.js';
import { normalizeEmail } from '../auth/auth-service.js';
import { mailAllowed } from '../auth/mail-limits.js';
import { rateLimited, type RateLimiter } from '../auth/rate-limiter.js';
import { AccessCode } from '../entities/access-code.js';
import { AccessGrant } from '../entities/access-grant.js';
import { Project } from '../entities/project.js';
import { HoistError, invalid } from '../errors.js';
import type { Cipher } from '../ports/cipher.js';
import type { Clock } from '../ports/clock.js';
import type { Mailer } from '../ports/mailer.js';
import type { PasswordHasher } from '../ports/password-hasher.js';
import type { TokenService } from '../ports/token-service.js';
import { token } from '../tokens.js';
import { CheckSlots } from './check-slots.js';

export const SITE_ACCESS_SERVICE = token<SiteAccessService>('hoist.SiteAccessService');

/** A mailed sign-in code lives this long. */
export const CODE_TTL_SECONDS = 600;
/** Tries one code allows; the next one is refused even when right. */
export const CODE_TRIES = 5;
export const CODE_DIGITS = 6;
/**
 * Password checks (argon2id, on the thread pool that also reads every tenant's static files) one process runs at
 * once; past it a try is refused at once with `unavailable` (the gate answers 503 with Retry-After).
 */
export const PASSWORD_CHECKS_AT_ONCE = 2;
/** The mail-limit kind of sign-in codes (see mailAllowed): per recipient and per client address, across projects. */
const CODE_MAIL_KIND = 'site-code';
/** Stands for "no such row" in the queries a code check makes either way. */
const NO_ID = '00000000-0000-0000-0000-000000000000';

/** The one answer to every failed code or password, so a failure never tells why (no enumeration). */
export const wrongCode = () =>
  new HoistError(
    'unauthorized',
    `That code is wrong or has expired. A code works for ${CODE_TTL_SECONDS / 60} ` +
      `minutes and ${CODE_TRIES} tries; ask for a new one.`,
  );
export const wrongPassword = () => new HoistError('unauthorized', 'That password is not right.');
/** Every password-check slot of this process is taken: come back in a moment. */
export const checksBusy = () =>
  new HoistError('unavailable', 'Too many sign-in checks are running right now; try again in a moment.', {
    retry_after: 1,
  });

/** A signed access token (the cookie's value) and when it expires. */
export interface SiteAccess {
  token: string;
  expiresAt: Date;
}

/** The project a gate serves: what the sign-in page shows and checks. */
export interface GatedProject {
  id: string;
  name: string;
  visibility: string;
  hasPassword: boolean;
}

// A password cookie names the hash it was opened with: a new password (new salt) ends it.
const passwordProof = (hash: string) =>
  `password:${createHash('sha256').update(hash).digest('base64url').slice(0, 22)}`;
const grantProof = (grantId: string) => `grant:${grantId}`;

/**
 * What opens a private project now: the `jti` a valid access token of it may name (its password's
 * proof, when it has one, and each grant's). The edge's routing table keeps it per project.
 */
export function accessProofs(passwordHash: string | null, grantIds: readonly string[]): Set<string> {
  const proofs = new Set(grantIds.map(grantProof));
  if (passwordHash) proofs.add(passwordProof(passwordHash));
  return proofs;
}

/**
 * Who may see a private project's site: a granted e-mail address that proved itself with a mailed
 * one-time code, or anyone with the access password. Either way the visitor gets a signed access
 * token (kind `site`) that is re-checked on every request.
 *
 * Codes are stored as an HMAC-SHA256 under `codeKey` (the Cipher's service-wide fingerprint key): six digits good
 * for a few tries need no slow hash, and a check then costs the same whether or not the address holds a grant.
 * Without `codeKey` codes can be neither issued nor checked (`on` gives one).
 */
export class SiteAccessService {
  constructor(
    private readonly em: EntityManager,
    private readonly hasher: PasswordHasher,
    private readonly tokens: TokenService,
    private readonly mailer: Mailer,
    private readonly limiter: RateLimiter,
    private readonly clock: Clock,
    private readonly config: HoistConfig,
    private readonly codeKey?: Pick<Cipher, 'fingerprint'>,
    private readonly passwordSlots = new CheckSlots(PASSWORD_CHECKS_AT_ONCE),
  ) {}

  /**
   * This service reading and writing through `em`, a fork: its calls then need no request context. The edge's gate
   * uses it so that its process never turns on AsyncLocalStorage (MikroORM's request and transaction contexts are
   * one), whose hooks, once on, stay on and cost every request the process answers afterwards. `codeKey` keys the
   * sign-in codes (this service's when not given); the password-check slots stay this process's one set.
   */
  on(em: EntityManager, codeKey = this.codeKey): SiteAccessService {
    return new SiteAccessService(
      em,
      this.hasher,
      this.tokens,
      this.mailer,
      this.limiter.on(em),
      this.clock,
      this.config,
      codeKey,
      this.passwordSlots,
    );
  }

  /** The active project `id` as the gate needs it, or null. */
  async project(id: string): Promise<GatedProject | null> {
    const p = await this.em.findOne(
      Project,
      { id, status: 'active' },
      { fields: ['id', 'name', 'visibility', 'accessPasswordHash'] },
    );
    return p && { id: p.id, name: p.name, visibility: p.visibility, hasPassword: p.accessPasswordHash !== null };
  }

  /**
   * Asks for a code for `email`. Throws invalid_request for an implausible address and
   * rate_limited past the per-client limits (on this project, and on all projects together); otherwise answers the
   * same whether or not the address is granted. The returned `delivery` mails a granted address its code and the
   * link `linkFor` makes (and does nothing for another address, nor past the recipient's limit across all projects):
   * the caller runs it without awaiting the answer, so neither the answer nor its timing tells the two apart.
   */
  async requestCode(
    projectId: string,
    email: string,
    client: string,
    linkFor: (email: string, code: string) => string,
  ): Promise<{ delivery: () => Promise<void> }> {
    const address = normalizeEmail(String(email ?? ''));
    if (!isEmail(address)) throw invalid('Enter a valid e-mail address', { field: 'email' });
    await this.limit('site-mail', projectId, client);
    // Across all projects too: one client cannot make Hoist mail codes through many projects (mailMaxPerAddress).
    const from = await this.limiter.hit(
      `mail:${CODE_MAIL_KIND}:from:${addressKey(client)}`,
      this.config.mailMaxPerAddress,
      this.config.mailWindowSeconds,
    );
    if (!from.allowed) throw rateLimited('Too many code requests from your address; try again later', from.retryAfter);
    return { delivery: () => this.deliver(projectId, address, linkFor) };
  }

  /**
   * Checks `code` for `email`; the right one, within its time and tries, opens the site once. Granted or not, a check
   * makes the same queries and one HMAC, so neither its answer nor its time tells whether the address holds a grant.
   */
  async verifyCode(projectId: string, email: string, code: string, client: string): Promise<SiteAccess> {
    await this.limit('site-try', projectId, client);
    const address = normalizeEmail(String(email ?? ''));
    const digits = String(code ?? '').replace(/\s+/g, '');
    const grant = await this.em.findOne(AccessGrant, { projectId, email: address }, { disableIdentityMap: true });
    const row = await this.em.findOne(
      AccessCode,
      { grantId: grant?.id ?? NO_ID, expiresAt: { $gt: this.clock.now() } },
      { orderBy: { createdAt: 'desc' }, disableIdentityMap: true },
    );
    // Counting the try before checking it: concurrent tries can never exceed the allowance.
    const counted = await this.em.nativeUpdate(
      AccessCode,
      { id: row?.id ?? NO_ID, attempts: { $lt: CODE_TRIES } },
      { attempts: raw('"attempts" + 1') },
    );
    const right = this.codeMatches(row?.id ?? NO_ID, digits, row?.codeHash ?? '');
    if (!grant || !row || !counted || !right) throw wrongCode();
    if (!(await this.em.nativeDelete(AccessCode, { id: row.id }))) throw wrongCode();
    return this.issue(projectId, grantProof(grant.id));
  }

  /**
   * Checks the access password of the project; the right one opens the site until the password changes. Limited per
   * client address on this project and on all projects, and per project from all addresses; throws unavailable (with
   * `retry_after`) when this process already runs PASSWORD_CHECKS_AT_ONCE checks.
   */
  async verifyPassword(projectId: string, password: string, client: string): Promise<SiteAccess> {
    await this.limit('site-try', projectId, client);
    const perProject = await this.limiter.hit(
      `site-password:${projectId}`,
      this.config.accessPasswordMaxPerProject,
      this.config.loginWindowSeconds,
    );
    if (!perProject.allowed)
      throw rateLimited('Too many password attempts on this site; try again later', perProject.retryAfter);
    const p = await this.em.findOne(
      Project,
      { id: projectId, status: 'active' },
      { fields: ['id', 'accessPasswordHash'], disableIdentityMap: true },
    );
    const hash = p?.accessPasswordHash;
    if (!hash || typeof password !== 'string') throw wrongPassword();
    const release = this.passwordSlots.take();
    if (!release) throw checksBusy();
    let right: boolean;
    try {
      right = await this.hasher.verify(hash, password);
    } finally {
      release();
    }
    if (!right) throw wrongPassword();
    return this.issue(projectId, passwordProof(hash));
  }

  /**
   * Whether `token` opens project `projectId` now: signed, unexpired, of kind site, for this project,
   * and what opened it still holds (the grant exists; the password is the same).
   */
  async allows(projectId: string, token: string | undefined): Promise<boolean> {
    if (!token) return false;
    const claims = await this.tokens.verify('site', token);
    if (!claims || claims.sub !== projectId) return false;
    if (claims.jti.startsWith('grant:')) {
      return (await this.em.count(AccessGrant, { id: claims.jti.slice('grant:'.length), projectId })) === 1;
    }
    const p = await this.em.findOne(
      Project,
      { id: projectId },
      { fields: ['id', 'accessPasswordHash'], disableIdentityMap: true },
    );
    return !!p?.accessPasswordHash && passwordProof(p.accessPasswordHash) === claims.jti;
  }

  private async deliver(
    projectId: string,
    email: string,
    linkFor: (email: string, code: string) => string,
  ): Promise<void> {
    const grant = await this.em.findOne(AccessGrant, { projectId, email }, { disableIdentityMap: true });
    // A grant is in effect only while its project is private (on a draft or public one it is kept, unused).
    const project = grant
      ? await this.em.findOne(
          Project,
          { id: projectId, visibility: 'private' },
          { fields: ['id', 'name'], disableIdentityMap: true },
        )
      : null;
    if (!grant || !project) return;
    // A granted address cannot be flooded with mail, through one project or many: past mailMaxPerRecipient codes to
    // it (all projects together), requests are ignored silently.
    if (!(await mailAllowed(this.limiter, this.config, CODE_MAIL_KIND, email, undefined))) return;
    const code = String(randomInt(0, 10 ** CODE_DIGITS)).padStart(CODE_DIGITS, '0');
    const id = randomUUID();
    const codeHash = this.codeDigest(id, code);
    const expiresAt = new Date(this.clock.now().getTime() + CODE_TTL_SECONDS * 1000);
    // The connection's own transaction: em.transactional, and em.commit's flush, run in AsyncLocalStorage contexts
    // (see `on`).
    const connection = this.em.getConnection();
    const ctx = await connection.begin();
    try {
      await this.em.nativeDelete(AccessCode, { grantId: grant.id }, { ctx });
      await this.em.insert(
        AccessCode,
        Object.assign(new AccessCode(), {
          id,
          projectId,
          grantId: grant.id,
          codeHash,
          expiresAt,
          createdAt: this.clock.now(),
        }),
        { ctx },
      );
      await connection.commit(ctx);
    } catch (err) {
      await connection.rollback(ctx);
      throw err;
    }
    await this.mailer.send({
      to: email,
      subject: `Your sign-in code for ${project.name}`,
      text:
        `Your code to open ${project.name}: ${code}\n\n` +
        `Or open this link to sign in:\n${linkFor(email, code)}\n\n` +
        `Code: ${code}\n\nThe code works for ${CODE_TTL_SECONDS / 60} minutes and ` +
        `${CODE_TRIES} tries. If you did not ask for it, ignore this mail.\n`,
    });
  }

  private async issue(projectId: string, proof: string): Promise<SiteAccess> {
    return this.tokens.sign('site', projectId, proof, this.config.accessCookieTtlSeconds);
  }

  /**
   * The stored form of code `code` of the access-code row `id`: an HMAC-SHA256 under the service-wide key, bound to
   * the row (a digest copied to another row does not open it).
   */
  private codeDigest(id: string, code: string): string {
    if (!this.codeKey) throw new HoistError('internal', 'Sign-in codes need a key (the Cipher)');
    return `hmac-sha256:${this.codeKey.fingerprint(`hoist-site-code\u0000${id}\u0000${code}`)}`;
  }

  /** Whether `digits` is the code `stored` holds for row `id`, in time independent of where they differ. */
  private codeMatches(id: string, digits: string, stored: string): boolean {
    const wellFormed = new RegExp(`^\\d{${CODE_DIGITS}}$`).test(digits);
    const a = Buffer.from(this.codeDigest(id, digits));
    const b = Buffer.from(stored.padEnd(a.length).slice(0, a.length));
    return timingSafeEqual(a, b) && stored.length === a.length && wellFormed;
  }

  /**
   * Counts one attempt of `kind` on the project from the client's address (an IPv6 one's /64); a try (code or
   * password) counts against the address on all projects together too (loginMaxPerAddress).
   */
  private async limit(kind: 'site-mail' | 'site-try', projectId: string, client: string): Promise<void> {
    const key = addressKey(client);
    const { allowed, retryAfter } = await this.limiter.hit(
      `${kind}:${projectId}:${key}`,
      this.config.accessMaxAttempts,
      this.config.loginWindowSeconds,
    );
    if (!allowed) throw rateLimited('Too many attempts; try again later', retryAfter);
    if (kind !== 'site-try') return;
    const all = await this.limiter.hit(
      `site-try:*:${key}`,
      this.config.loginMaxPerAddress,
      this.config.loginWindowSeconds,
    );
    if (!all.allowed) throw rateLimited('Too many attempts; try again later', all.retryAfter);
  }
}
