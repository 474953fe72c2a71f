import { revokeAgentGrants } from '../auth/agent-auth-service.js';
import type { EntityManager } from '@mikro-orm/core';
import { normalizeEmail } from '../auth/auth-service.js';
import { mailAllowed } from '../auth/mail-limits.js';
import type { PasswordRecoveryService } from '../auth/password-recovery-service.js';
import type { Principal } from '../auth/principal.js';
import { rateLimited, type RateLimiter } from '../auth/rate-limiter.js';
import { userKey } from '../auth/session-cache.js';
import type { SessionRevocations } from '../auth/session-revocations.js';
import type { EntitlementService } from '../billing/entitlement-service.js';
import { underOwnerLock } from '../billing/owner-lock.js';
import type { HoistConfig } from '../../config/schema.js';
import { Account } from '../entities/account.js';
import { OneTimeToken } from '../entities/one-time-token.js';
import { Session } from '../entities/session.js';
import { User } from '../entities/user.js';
import { conflict, invalid, notFound } from '../errors.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import type { Clock } from '../ports/clock.js';
import { isUuid } from '../projects/keyset-cursor.js';
import { token } from '../tokens.js';
import { expireSessionsOpenedBy } from '../uploads/upload-session-service.js';
import { accountChanged, accountKey } from './account-changes.js';
import { isEmail } from './account-service.js';
import { dropLapsedInvitation, lapsed } from './invitations.js';
import { assertOwner, checkRole } from './roles.js';

export const MEMBER_SERVICE = token<MemberService>('hoist.MemberService');

/** A member as the API shows it. */
export interface MemberView {
  id: string;
  email: string;
  role: string;
  /**
   * `invited` until the member chose a password with the mailed token, then `active`; `expired` when nobody did
   * within the 7 days of the last invitation (the address is then free for another account).
   */
  status: 'invited' | 'expired' | 'active';
  created_at: string;
}

const view = (u: User, now: Date): MemberView => ({
  id: u.id,
  email: u.email,
  role: u.role,
  status: u.passwordHash !== null ? 'active' : lapsed(u, now) ? 'expired' : 'invited',
  created_at: u.createdAt.toISOString(),
});

/**
 * The people of an account (Vercel's and Netlify's team members): every member works on all of the account's
 * projects; owners also invite, change and remove members and rename the account. An invitation makes the user at
 * once, without a password, and mails a set-password token (7 days, as an approved access request's); the plan caps
 * members (`members_per_account`). An account always keeps an owner. A removed member's tokens stop at once, on
 * every API process.
 */
export class MemberService {
  constructor(
    private readonly em: EntityManager,
    private readonly recovery: Pick<PasswordRecoveryService, 'sendInvitation'>,
    private readonly entitlements: EntitlementService,
    private readonly limiter: RateLimiter,
    private readonly revocations: SessionRevocations,
    private readonly changes: Pick<ChangeFeed, 'publish'>,
    private readonly clock: Clock,
    private readonly config: Pick<HoistConfig, 'mailMaxPerAddress' | 'mailMaxPerRecipient' | 'mailWindowSeconds'>,
  ) {}

  /** The account's members, oldest first. */
  async list(principal: Principal): Promise<MemberView[]> {
    const users = await this.em
      .fork()
      .find(User, { accountId: principal.accountId }, { orderBy: { createdAt: 'asc' } });
    return users.map((u) => view(u, this.clock.now()));
  }

  /**
   * Invites `email` into the account with `role` (member by default): makes the user and mails them a set-password
   * token; resolves `created: false` and mails a new token when that address was invited here already and has not
   * chosen a password. An invitation of another account that lapsed (invitations.ts) no longer holds the address.
   * Throws forbidden (not an owner), invalid_request (email, role), conflict (the address has an
   * account), plan_restricted (members_per_account) or rate_limited (mailMaxPerAddress invitations a window from the
   * client's address or from the account, mailMaxPerRecipient to one address).
   */
  async invite(
    principal: Principal,
    input: { email: unknown; role?: unknown },
    client: { address?: string } = {},
  ): Promise<{ member: MemberView; created: boolean }> {
    if (typeof input.email !== 'string') throw invalid('email must be a string', { field: 'email' });
    const email = normalizeEmail(input.email);
    if (!isEmail(email)) throw invalid(`Not a valid e-mail address: ${input.email.slice(0, 320)}`, { field: 'email' });
    const role = checkRole(input.role);
    // Before the mail limits count: a member's call counts nothing. Checked again under the lock.
    await this.owner(principal);
    await this.assertAccountMailRoom(principal.accountId);
    if (!(await mailAllowed(this.limiter, this.config, 'invitation', email, client.address)))
      throw rateLimited(`${email} was sent too many invitations; try again later`, this.config.mailWindowSeconds);
    const { user, created, inviter } = await underOwnerLock(this.em, Account, principal.accountId, async (tx) => {
      const inviter = await this.owner(principal, tx);
      const now = this.clock.now();
      const known = (await dropLapsedInvitation(tx, email, now)) ? null : await tx.findOne(User, { email });
      if (known?.accountId === principal.accountId && known.passwordHash === null) {
        await tx.nativeUpdate(User, { id: known.id }, { invitedAt: now });
        return { user: Object.assign(known, { invitedAt: now }), created: false, inviter };
      }
      if (known)
        throw conflict(`${email} already has a Hoist account; one address belongs to one account`, { field: 'email' });
      const count = await tx.count(User, { accountId: principal.accountId });
      await this.entitlements.assertWithin(principal.accountId, 'members_per_account', count);
      const fresh = Object.assign(new User(), {
        accountId: principal.accountId,
        email,
        role,
        passwordHash: null,
        invitedAt: now,
        createdAt: now,
      });
      await tx.insert(fresh);
      return { user: fresh, created: true, inviter };
    });
    const account = await this.em.fork().findOneOrFail(Account, { id: principal.accountId });
    await this.recovery.sendInvitation(user, inviter.email, account.name);
    return { member: view(user, this.clock.now()), created };
  }

  /**
   * Gives a member another role. Throws forbidden (not an owner), invalid_request, not_found (no such member of the
   * account) or conflict (it would leave the account without an owner).
   */
  async setRole(principal: Principal, userId: string, role: unknown): Promise<MemberView> {
    const next = checkRole(role);
    const user = await underOwnerLock(this.em, Account, principal.accountId, async (tx) => {
      await this.owner(principal, tx);
      const member = await this.member(tx, principal, userId);
      if (member.role === 'owner' && next !== 'owner') await this.assertAnotherOwner(tx, principal, member);
      await tx.nativeUpdate(User, { id: member.id }, { role: next });
      return Object.assign(member, { role: next });
    });
    await accountChanged(this.changes, userKey(user.id));
    return view(user, this.clock.now());
  }

  /**
   * Removes a member: their sessions end and their tokens are refused at once, and the upload sessions they opened
   * that are still open expire at once (their URLs answer gone). What they made stays the account's: projects, and
   * deploy hooks and webhooks (their `createdBy` names them, for an owner to remove or recreate: the member knew
   * their URLs and secrets). An owner removes anyone; a member only themselves (leaving). Throws forbidden,
   * not_found or conflict (the last owner).
   */
  async remove(principal: Principal, userId: string): Promise<void> {
    const now = this.clock.now();
    await underOwnerLock(this.em, Account, principal.accountId, async (tx) => {
      if (userId !== principal.userId) await this.owner(principal, tx);
      const member = await this.member(tx, principal, userId);
      if (member.role === 'owner') await this.assertAnotherOwner(tx, principal, member);
      await tx.nativeUpdate(Session, { userId: member.id, revokedAt: null }, { revokedAt: now });
      await revokeAgentGrants(tx, member.id, now);
      await expireSessionsOpenedBy(tx, principal.accountId, member.id, now);
      await tx.nativeDelete(OneTimeToken, { userId: member.id });
      await tx.nativeDelete(User, { id: member.id });
    });
    await this.revocations.revoked(userKey(userId));
    await accountChanged(this.changes, userKey(userId));
    await accountChanged(this.changes, accountKey(principal.accountId));
  }

  /**
   * The acting user, who must be an owner of the account (forbidden otherwise). A change of members reads it with
   * `em` its transaction, under the account's lock: an owner demoted or removed while the call waited for that lock
   * no longer acts as one.
   */
  async owner(principal: Principal, em: EntityManager = this.em.fork()): Promise<User> {
    const user = await em.findOne(User, { id: principal.userId, accountId: principal.accountId });
    assertOwner(user);
    return user;
  }

  /**
   * Counts an invitation of the account: past mailMaxPerAddress a window, whatever the client addresses, throws
   * rate_limited (invite, remove and invite the next address would mail anyone from enough client addresses).
   */
  private async assertAccountMailRoom(accountId: string): Promise<void> {
    const { mailMaxPerAddress: max, mailWindowSeconds: window } = this.config;
    const hit = await this.limiter.hit(`mail:invitation:account:${accountId}`, max, window);
    if (!hit.allowed) throw rateLimited('This account sent too many invitations; try again later', hit.retryAfter);
  }

  private async member(tx: EntityManager, principal: Principal, userId: string): Promise<User> {
    const member = isUuid(userId) ? await tx.findOne(User, { id: userId, accountId: principal.accountId }) : null;
    if (!member) throw notFound('Member');
    return member;
  }

  private async assertAnotherOwner(tx: EntityManager, principal: Principal, member: User): Promise<void> {
    const owners = await tx.count(User, { accountId: principal.accountId, role: 'owner', id: { $ne: member.id } });
    if (!owners) throw conflict('The account needs an owner: make another member an owner first', { role: 'owner' });
  }
}
