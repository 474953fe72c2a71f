import type { EntityManager } from '@mikro-orm/core';
import { Account } from '../entities/account.js';
import { User } from '../entities/user.js';
import { conflict, invalid, notFound } from '../errors.js';
import { normalizeEmail } from '../auth/auth-service.js';
import { plans } from '../billing/plans.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import type { Clock } from '../ports/clock.js';
import type { PasswordHasher } from '../ports/password-hasher.js';
import { token } from '../tokens.js';
import { accountChanged, accountKey } from './account-changes.js';
import { dropLapsedInvitation } from './invitations.js';

export const ACCOUNT_SERVICE = token<AccountService>('hoist.AccountService');

/** The atext of RFC 5322: what a local part's dot-separated words are made of. */
const ATEXT = "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+";
/** A DNS label: letters, digits and hyphens, not starting or ending with a hyphen. */
const LABEL = '[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?';
const EMAIL = new RegExp(`^${ATEXT}(?:\\.${ATEXT})*@${LABEL}(?:\\.${LABEL})+$`);

/**
 * True for a plain e-mail address: a dot-atom local part, one @ and a domain of two or more DNS labels, at most 320
 * characters (the WHATWG form of `<input type=email>`, in ASCII: an IDN domain is written in punycode). Nothing a mail
 * library reads as address syntax passes: `<>`, `,`, `;`, `:`, `()`, quotes, spaces... (`a@b.c,` was one address
 * to Hoist, its own mail limit and its own user or grant, and `a@b.c` to the relay; `a@b.c<root>` mailed `root`).
 */
export function isEmail(email: string): boolean {
  return email.length <= 320 && EMAIL.test(email);
}

/** Creates and administers accounts (admin CLI; public registration is disabled). */
export class AccountService {
  constructor(
    private readonly em: EntityManager,
    private readonly hasher: PasswordHasher,
    private readonly clock: Clock,
    private readonly changes: Pick<ChangeFeed, 'publish'>,
  ) {}

  /**
   * Creates an account with its first user; `password` may be omitted (set later by a reset link). Throws conflict
   * when the address has a user, unless that is an invitation that lapsed (invitations.ts), which goes.
   */
  async create(input: {
    email: string;
    password?: string;
    name?: string;
    plan?: string;
  }): Promise<{ account: Account; user: User }> {
    const email = normalizeEmail(input.email);
    if (!isEmail(email)) throw invalid(`Not a valid e-mail address: ${input.email}`, { field: 'email' });
    if (input.password !== undefined && input.password.length < 8)
      throw invalid('Password must be at least 8 characters', { field: 'password' });
    const plan = input.plan ?? 'free';
    if (!plans[plan]) throw invalid(`Unknown plan ${plan}; known: ${Object.keys(plans).join(', ')}`, { field: 'plan' });
    const now = this.clock.now();
    // An invitation to another account that nobody accepted in time does not hold the address.
    await dropLapsedInvitation(this.em, email, now);
    if (await this.em.count(User, { email })) throw conflict(`An account with e-mail ${email} already exists`);
    const account = Object.assign(new Account(), { name: input.name ?? email, plan, createdAt: now, updatedAt: now });
    const user = Object.assign(new User(), {
      accountId: account.id,
      createdAt: now,
      email,
      passwordHash: input.password === undefined ? null : await this.hasher.hash(input.password),
    });
    await this.em.persist([account, user]).flush();
    return { account, user };
  }

  /** Every account with its users' e-mails, oldest first. */
  async list(): Promise<{ account: Account; emails: string[] }[]> {
    const accounts = await this.em.find(Account, {}, { orderBy: { createdAt: 'asc' } });
    const users = await this.em.find(User, { accountId: { $in: accounts.map((a) => a.id) } });
    return accounts.map((account) => ({
      account,
      emails: users.filter((u) => u.accountId === account.id).map((u) => u.email),
    }));
  }

  /** Moves the account of the user with `email` to `plan`. */
  async setPlan(email: string, plan: string): Promise<Account> {
    if (!plans[plan]) throw invalid(`Unknown plan ${plan}; known: ${Object.keys(plans).join(', ')}`, { field: 'plan' });
    const user = await this.em.findOne(User, { email: normalizeEmail(email) });
    if (!user) throw notFound(`Account for ${email}`);
    const account = await this.em.findOneOrFail(Account, { id: user.accountId });
    account.plan = plan;
    account.updatedAt = this.clock.now();
    await this.em.flush();
    await accountChanged(this.changes, accountKey(account.id));
    return account;
  }
}
