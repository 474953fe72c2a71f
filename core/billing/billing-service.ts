import type { EntityManager } from '@mikro-orm/core';
import { queryRows } from '../entities/plain-sql.js';
import type { HoistConfig } from '../../config/schema.js';
import { ACCOUNTS_CHANNEL, accountChanged, accountKey } from '../accounts/account-changes.js';
import { userKey } from '../auth/session-cache.js';
import { answerCache, type TaggedCache } from '../caching/tagged-cache.js';
import { Account } from '../entities/account.js';
import { User } from '../entities/user.js';
import { assertOwner } from '../accounts/roles.js';
import { invalid, unauthorized } from '../errors.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import type { Clock } from '../ports/clock.js';
import { plans } from './plans.js';
import { token } from '../tokens.js';

export const BILLING_SERVICE = token<BillingService>('hoist.BillingService');

/** The authenticated identity as the `/me` call answers it. */
export interface Me {
  user: { id: string; email: string; email_verified: boolean; role: string };
  account: {
    id: string;
    name: string;
    plan: string;
    billing_category: string;
    subscription_status: string;
    created_at: string;
  };
}

/** The account's subscription state. */
export interface Subscription {
  plan: string;
  plan_name: string;
  price_cents: number;
  subscription_status: string;
  billing_category: string;
}

const ME_QUERY =
  'select u.id as user_id, u.email, u.email_verified_at, u.role, a.id as account_id, a.name, a.plan, ' +
  'a.billing_category, a.subscription_status, a.created_at from users u join accounts a on a.id = u.account_id ' +
  'where u.id = ?';

interface MeRow {
  user_id: string;
  email: string;
  email_verified_at: unknown;
  role: string;
  account_id: string;
  name: string;
  plan: string;
  billing_category: string;
  subscription_status: string;
  created_at: Date | number | string;
}

/** Account identity and billing state of the authenticated account. */
export class BillingService {
  /** `me` answers by user id, tagged with the user and the account (the keys of the `accounts` channel). */
  private readonly answers: TaggedCache<Me>;

  constructor(
    private readonly em: EntityManager,
    private readonly clock: Clock,
    private readonly changes: ChangeFeed,
    config: Pick<HoistConfig, 'answerCacheSeconds'>,
  ) {
    this.answers = answerCache<Me>(config);
    changes.subscribe(ACCOUNTS_CHANNEL, (key) => this.answers.drop(key));
  }

  /**
   * The user and their account; 401 when the user was removed since the token was issued. Every poll of `GET /me`
   * comes here: an answer is kept until a write of the user or the account is announced (`accountChanged`), at
   * most `answerCacheSeconds`; else one plain query (entities would cost several times the query itself).
   */
  async me(userId: string): Promise<Me> {
    const now = this.clock.now().getTime();
    const kept = this.answers.get(userId, now);
    if (kept) return kept;
    const epoch = this.answers.epoch;
    const [row] = await queryRows<MeRow>(this.em, ME_QUERY, [userId]);
    if (!row) throw unauthorized();
    const me = {
      user: { id: row.user_id, email: row.email, email_verified: row.email_verified_at !== null, role: row.role },
      account: {
        id: row.account_id,
        name: row.name,
        plan: row.plan,
        billing_category: row.billing_category,
        subscription_status: row.subscription_status,
        // A Date on PostgreSQL, epoch milliseconds on SQLite.
        created_at: new Date(row.created_at).toISOString(),
      },
    };
    this.answers.put(userId, me, [userKey(userId), accountKey(row.account_id)], now, epoch);
    return me;
  }

  /** Renames the user's account (1–200 characters, trimmed) and answers like `me`; forbidden unless an owner. */
  async renameAccount(userId: string, name: string): Promise<Me> {
    const trimmed = name.trim();
    if (trimmed.length < 1 || trimmed.length > 200)
      throw invalid('Account name must be 1 to 200 characters', { field: 'name' });
    const user = await this.em.findOne(User, { id: userId });
    if (!user) throw unauthorized();
    assertOwner(user);
    const account = await this.em.findOneOrFail(Account, { id: user.accountId });
    account.name = trimmed;
    account.updatedAt = this.clock.now();
    await this.em.flush();
    await accountChanged(this.changes, accountKey(account.id));
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
