import type { EntityManager } from '@mikro-orm/core';
import type { HoistConfig } from '../../config/schema.js';
import { accountChanged } from '../accounts/account-changes.js';
import { User } from '../entities/user.js';
import { unauthorized } from '../errors.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import type { Clock } from '../ports/clock.js';
import type { Mailer } from '../ports/mailer.js';
import { apiLink } from './links.js';
import type { OneTimeTokens } from './one-time-tokens.js';
import type { Principal } from './principal.js';
import { userKey } from './session-cache.js';
import { token } from '../tokens.js';
import { rateLimited, type RateLimiter } from './rate-limiter.js';

export const EMAIL_VERIFICATION_SERVICE = token<EmailVerificationService>('hoist.EmailVerificationService');

/** Lifetime of a verification token. */
export const VERIFY_TTL_SECONDS = 24 * 3600;

/** Proves a user owns their e-mail address with a mailed one-time token. */
export class EmailVerificationService {
  constructor(
    private readonly em: EntityManager,
    private readonly oneTime: OneTimeTokens,
    private readonly mailer: Mailer,
    private readonly clock: Clock,
    private readonly config: HoistConfig,
    private readonly changes: Pick<ChangeFeed, 'publish'>,
    private readonly limiter: RateLimiter,
  ) {}

  /**
   * Mails the principal's user a verification token; `already_verified` (and no mail) when there is nothing to do.
   * A user gets at most `mailMaxPerRecipient` of them per `mailWindowSeconds`: past it rate_limited (with
   * retry_after), so no account spends the operator's mail relay.
   */
  async request(principal: Principal): Promise<{ status: 'sent' | 'already_verified' }> {
    const user = await this.em.findOne(User, { id: principal.userId });
    if (!user) throw unauthorized();
    if (user.emailVerifiedAt) return { status: 'already_verified' };
    const { mailMaxPerRecipient: max, mailWindowSeconds: window } = this.config;
    const hit = await this.limiter.hit(`mail:verify:user:${user.id}`, max, window);
    if (!hit.allowed) throw rateLimited('Too many verification mails; try again later', hit.retryAfter);
    const token = await this.oneTime.issue(user.id, 'verify_email', VERIFY_TTL_SECONDS);
    const url = apiLink(this.config, '/api/v1/auth/email-verification/confirm');
    await this.mailer.send({
      to: user.email,
      subject: 'Confirm your e-mail address for Hoist',
      text:
        `To confirm ${user.email} for your Hoist account, send this token within 24 hours:\n\n` +
        `  POST ${url}\n  {"token": "${token}"}\n\nToken: ${token}\n\nIf you did not ask ` +
        `for this, ignore this message.\n`,
    });
    return { status: 'sent' };
  }

  /** Marks the token's user verified; throws invalid_request (field `token`) for an unknown, used or expired token. */
  async confirm(token: string): Promise<void> {
    const row = await this.oneTime.consume(token, 'verify_email');
    await this.em.nativeUpdate(User, { id: row.userId, emailVerifiedAt: null }, { emailVerifiedAt: this.clock.now() });
    await accountChanged(this.changes, userKey(row.userId));
  }
}
