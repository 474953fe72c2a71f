import type { EntityManager } from '@mikro-orm/core';
import { Account } from '../entities/account.js';
import { User } from '../entities/user.js';
import { invalid, unauthorized } from '../errors.js';
import { plans } from './plans.js';

export const BILLING_SERVICE = Symbol.for('hoist.BillingService');

/** The authenticated identity as the `/me` call answers it. */
export interface Me {
  user: { id: string; email: string; email_verified: boolean };
  account: { id: string; name: string; plan: string; billing_category: string; subscription_status: string; created_at: string };
}

/** The account's subscription state. */
export interface Subscription {
  plan: string;
  plan_name: string;
  price_cents: number;
  subscription_status: string;
  billing_category: string;
}

/** Account identity and billing state of the authenticated account. */
export class BillingService {
  constructor(private readonly em: EntityManager) {}

  /** The user and their account; 401 when the user was removed since the token was issued. */
  async me(userId: string): Promise<Me> {
    const user = await this.em.findOne(User, { id: userId });
    if (!user) throw unauthorized();
    const account = await this.em.findOneOrFail(Account, { id: user.accountId });
    return {
      user: { id: user.id, email: user.email, email_verified: user.emailVerifiedAt !== null },
      account: {
        id: account.id,
        name: account.name,
        plan: account.plan,
        billing_category: account.billingCategory,
        subscription_status: account.subscriptionStatus,
        created_at: account.createdAt.toISOString(),
      },
    };
  }

  /** Renames the user's account (1–200 characters, trimmed) and answers like `me`. */
  async renameAccount(userId: string, name: string): Promise<Me> {
    const trimmed = name.trim();
    if (trimmed.length < 1 || trimmed.length > 200) throw invalid('Account name must be 1 to 200 characters', { field: 'name' });
    const user = await this.em.findOne(User, { id: userId });
    if (!user) throw unauthorized();
    const account = await this.em.findOneOrFail(Account, { id: user.accountId });
    account.name = trimmed;
    await this.em.flush();
    return this.me(userId);
  }

  /** The plan, subscription status and billing category of the account. */
  async subscription(accountId: string): Promise<Subscription> {
    const account = await this.em.findOneOrFail(Account, { id: accountId });
    const plan = plans[account.plan] ?? plans.free;
    return {
      plan: account.plan,
      plan_name: plan.name,
      price_cents: plan.price_cents,
      subscription_status: account.subscriptionStatus,
      billing_category: account.billingCategory,
    };
  }
}
