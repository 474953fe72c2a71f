import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { isEmail, type AccountService } from '../accounts/account-service.js';
import { normalizeEmail } from '../auth/auth-service.js';
import { mailAllowed } from '../auth/mail-limits.js';
import type { PasswordRecoveryService } from '../auth/password-recovery-service.js';
import type { RateLimiter } from '../auth/rate-limiter.js';
import type { HoistConfig } from '../../config/schema.js';
import type { Account } from '../entities/account.js';
import { AccessRequest } from '../entities/access-request.js';
import { User } from '../entities/user.js';
import { dropLapsedInvitation } from '../accounts/invitations.js';
import { conflict, invalid, notFound } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import { token } from '../tokens.js';

export const ACCESS_REQUEST_SERVICE = token<AccessRequestService>('hoist.AccessRequestService');

/** What a visitor sends to ask for an account. */
export interface AccessRequestInput {
  email: string;
  name?: string;
  message?: string;
}

/** The states of a request, in order. */
export const accessRequestStatuses = ['pending', 'approved'] as const;

/** Public access requests (the only way to an account) and their approval by an admin. */
export class AccessRequestService {
  constructor(
    private readonly em: EntityManager,
    private readonly accounts: AccountService,
    private readonly recovery: PasswordRecoveryService,
    private readonly clock: Clock,
    private readonly limiter: RateLimiter,
    private readonly config: Pick<HoistConfig, 'mailMaxPerAddress' | 'mailMaxPerRecipient' | 'mailWindowSeconds'>,
  ) {}

  /**
   * Records a request, once per e-mail: a repeat, or an e-mail that already has an account, stores
   * nothing and resolves the same way, so the caller learns nothing about existing accounts.
   * Throws invalid_request (field `email`) for an implausible address, and rate_limited past
   * `mailMaxPerAddress` requests from the client's address; past `mailMaxPerRecipient` for one
   * e-mail it stores nothing and resolves the same way (mail-limits.ts).
   */
  async submit(input: AccessRequestInput, client: { address?: string } = {}): Promise<void> {
    const email = normalizeEmail(input.email);
    if (!isEmail(email)) throw invalid(`Not a valid e-mail address: ${input.email}`, { field: 'email' });
    if (!(await mailAllowed(this.limiter, this.config, 'access-request', email, client.address))) return;
    const known = await this.em.findOne(AccessRequest, { email }, { fields: ['id'] });
    // An invitation to an account that nobody accepted in time does not hold the address.
    await dropLapsedInvitation(this.em, email, this.clock.now());
    if (known || (await this.em.count(User, { email }))) return;
    try {
      await this.em.insert(
        AccessRequest,
        Object.assign(new AccessRequest(), {
          email,
          name: input.name?.trim() || null,
          message: input.message?.trim() || null,
          createdAt: this.clock.now(),
        }),
      );
    } catch (err) {
      // The same e-mail submitted concurrently: the other request's row stands.
      if (!(err instanceof UniqueConstraintViolationException)) throw err;
    }
  }

  /** Requests, oldest first; only those with `status` (pending or approved) when given. */
  async list(status?: string): Promise<AccessRequest[]> {
    if (status !== undefined && !(accessRequestStatuses as readonly string[]).includes(status)) {
      throw invalid(`Unknown status ${status}; known: ${accessRequestStatuses.join(', ')}`, { field: 'status' });
    }
    return this.em.find(AccessRequest, status ? { status } : {}, { orderBy: { createdAt: 'asc' } });
  }

  /**
   * Approves the pending request of `email`: creates the account without a password, marks the
   * request approved and mails a set-password token (the password-recovery reset, valid 7 days).
   * Throws not_found without a request, conflict when it is already approved or the e-mail has an account.
   */
  async approve(email: string): Promise<{ account: Account; user: User }> {
    const request = await this.em.findOne(AccessRequest, { email: normalizeEmail(email) });
    if (!request) throw notFound(`Access request for ${email}`);
    if (request.status === 'approved') throw conflict(`The access request for ${request.email} is already approved`);
    const created = await this.accounts.create({ email: request.email, name: request.name ?? undefined });
    request.status = 'approved';
    request.approvedAt = this.clock.now();
    await this.em.flush();
    await this.recovery.sendSetPasswordLink(created.user);
    return created;
  }
}
