import { revokeAgentGrants } from './agent-auth-service.js';
import type { EntityManager } from '@mikro-orm/core';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HoistConfig } from '../../config/schema.js';
import { accountChanged } from '../accounts/account-changes.js';
import { Session } from '../entities/session.js';
import { User } from '../entities/user.js';
import { invalid } from '../errors.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import type { Clock } from '../ports/clock.js';
import type { Mailer } from '../ports/mailer.js';
import type { PasswordHasher } from '../ports/password-hasher.js';
import { normalizeEmail } from './auth-service.js';
import { apiLink } from './links.js';
import type { OneTimeTokens } from './one-time-tokens.js';
import { mailAllowed } from './mail-limits.js';
import type { RateLimiter } from './rate-limiter.js';
import { userKey } from './session-cache.js';
import type { SessionRevocations } from './session-revocations.js';
import { token, type Logger } from '../tokens.js';

export const PASSWORD_RECOVERY_SERVICE = token<PasswordRecoveryService>('hoist.PasswordRecoveryService');

/** Lifetime of a password-recovery token. */
export const RESET_TTL_SECONDS = 3600;
/** Lifetime of the set-password token mailed when an access request is approved. */
export const SET_PASSWORD_TTL_SECONDS = 7 * 24 * 3600;
// Recovery answers no sooner than this, so a known and an unknown e-mail take about the same time.
const RECOVERY_FLOOR_MS = 250;

/** The most characters of a text a mail subject takes (subjectPart). */
export const SUBJECT_PART_MAX = 100;

/** `text` on one line (control and line-separator characters as spaces), cut to SUBJECT_PART_MAX characters. */
export function subjectPart(text: string): string {
  const chars = [...text.replace(/[\p{Cc}\p{Zl}\p{Zp}]+/gu, ' ').trim()];
  return chars.length > SUBJECT_PART_MAX ? `${chars.slice(0, SUBJECT_PART_MAX - 1).join('')}…` : chars.join('');
}

/** Password recovery and first passwords: mailed one-time reset tokens, and the reset itself. */
export class PasswordRecoveryService {
  constructor(
    private readonly em: EntityManager,
    private readonly oneTime: OneTimeTokens,
    private readonly mailer: Mailer,
    private readonly hasher: PasswordHasher,
    private readonly clock: Clock,
    private readonly config: HoistConfig,
    private readonly limiter: RateLimiter,
    private readonly revocations: SessionRevocations,
    private readonly changes: Pick<ChangeFeed, 'publish'>,
    private readonly log?: Pick<Logger, 'error'>,
  ) {}

  /**
   * Mails a reset token when `email` has an account; resolves the same way, in about the same time,
   * when not: the token is stored before the answer, the mail sent after it (a relay's time, or its
   * refusal, would tell a known address from an unknown one; a refusal is logged). Limited in sliding
   * windows of `mailWindowSeconds`: past `mailMaxPerAddress` requests from the client's address, throws
   * rate_limited; past `mailMaxPerRecipient` for one e-mail (known or not), resolves the same way and
   * mails nothing, so nobody can flood a mailbox.
   */
  async request(email: string, client: { address?: string } = {}): Promise<void> {
    const started = performance.now();
    try {
      if (!(await mailAllowed(this.limiter, this.config, 'recovery', email, client.address))) return;
      const user = await this.em.findOne(User, { email: normalizeEmail(email) });
      if (user) {
        const send = await this.prepare(
          user,
          RESET_TTL_SECONDS,
          'Reset your Hoist password',
          `Someone asked to reset the Hoist password of ${user.email}.`,
        );
        void send().catch((err: Error) =>
          this.log?.error({ userId: user.id, reason: err.message }, 'a password recovery mail was not sent'),
        );
      }
    } finally {
      const left = RECOVERY_FLOOR_MS - (performance.now() - started);
      if (left > 0) await sleep(left);
    }
  }

  /** Mails `user` a set-password token (7 days) that works like a recovery token (approved access requests). */
  async sendSetPasswordLink(user: User): Promise<void> {
    const send = await this.prepare(
      user,
      SET_PASSWORD_TTL_SECONDS,
      'Your Hoist account is ready: choose a password',
      `Your Hoist account for ${user.email} is ready.`,
    );
    await send();
  }

  /**
   * Mails `user`, just invited into account `accountName` by `inviter` (an e-mail), a set-password token (7 days) that
   * works like a recovery token; a newer invitation's token leaves the older ones working until they expire. The
   * subject holds both on one line, each cut to SUBJECT_PART_MAX characters: an account name may hold line breaks
   * (PATCH /me), and the outbox keeps a subject of 300 characters at most.
   */
  async sendInvitation(user: User, inviter: string, accountName: string): Promise<void> {
    const send = await this.prepare(
      user,
      SET_PASSWORD_TTL_SECONDS,
      `${subjectPart(inviter)} invited you to ${subjectPart(accountName)} on Hoist`,
      `${inviter} invited ${user.email} to the Hoist account ${JSON.stringify(accountName)}, to deploy its projects.`,
      `Then log in with ${user.email} and that password (hoist login --api ${apiLink(this.config, '')}). If you do ` +
        'not want to join, ignore this message: the invitation lapses with its token.',
    );
    await send();
  }

  /**
   * Sets a new password (at least 8 characters) with a reset token, which is then used up with
   * every other pending one of the user, and revokes every session and agent token of the user. Receiving the
   * token proves the e-mail address, so the user counts as verified. Throws invalid_request
   * (field `token` or `password`).
   */
  async reset(token: string, password: string): Promise<void> {
    if (password.length < 8) throw invalid('Password must be at least 8 characters', { field: 'password' });
    const row = await this.oneTime.consume(token, 'reset_password');
    const passwordHash = await this.hasher.hash(password);
    const now = this.clock.now();
    await this.em.transactional(async (em) => {
      await em.nativeUpdate(User, { id: row.userId }, { passwordHash });
      await em.nativeUpdate(User, { id: row.userId, emailVerifiedAt: null }, { emailVerifiedAt: now });
      await em.nativeUpdate(Session, { userId: row.userId, revokedAt: null }, { revokedAt: now });
      await revokeAgentGrants(em, row.userId, now);
      await this.oneTime.retire(row.userId, 'reset_password');
    });
    await this.revocations.revoked(userKey(row.userId));
    await accountChanged(this.changes, userKey(row.userId));
  }

  /**
   * Stores a reset token of `user`; resolves the sending of the mail that carries it, between `intro` and `outro` (by
   * default: ignore it if you did not ask).
   */
  private async prepare(
    user: User,
    ttlSeconds: number,
    subject: string,
    intro: string,
    outro = 'If you did not ask for this, ignore this message; your password stays as it is.',
  ): Promise<() => Promise<void>> {
    const token = await this.oneTime.issue(user.id, 'reset_password', ttlSeconds);
    const hours = ttlSeconds / 3600;
    const within = hours >= 48 ? `${hours / 24} days` : hours === 1 ? '1 hour' : `${hours} hours`;
    const url = apiLink(this.config, '/api/v1/auth/password-recovery/reset');
    return () =>
      this.mailer.send({
        to: user.email,
        subject,
        text:
          `${intro}\n\nTo choose a password (at least 8 characters), send this token within ` +
          `${within}; it works once:\n\n` +
          `  POST ${url}\n  {"token": "${token}", "password": "<your new password>"}\n\nToken: ${token}\n\n` +
          `${outro}\n`,
      });
  }
}
