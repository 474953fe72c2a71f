import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** A customer account: owns users, projects and a plan. */
export class Account {
  id: string = randomUUID();
  name!: string;
  plan: string = 'free';
  /** Billing category shown to the account: `individual` or `business`. */
  billingCategory: string = 'individual';
  /** Subscription state: `active`, `past_due` or `canceled`. */
  subscriptionStatus: string = 'active';
  createdAt!: Date;
  updatedAt!: Date;
}

export const AccountSchema = new EntitySchema<Account>({
  class: Account,
  tableName: 'accounts',
  properties: {
    id: { type: 'uuid', primary: true },
    name: { type: 'string', length: 200 },
    plan: { type: 'string', length: 32 },
    billingCategory: { type: 'string', length: 32 },
    subscriptionStatus: { type: 'string', length: 32 },
    createdAt: { type: 'Date' },
    updatedAt: { type: 'Date' },
  },
});
