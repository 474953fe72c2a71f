import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** A person who logs in; belongs to one account, as its owner or a member. */
export class User {
  id: string = randomUUID();
  accountId!: string;
  /** Lower-cased e-mail address, unique. */
  email!: string;
  /** argon2id hash; null until a password is set (approved access requests). */
  passwordHash: string | null = null;
  emailVerifiedAt: Date | null = null;
  /** `owner` (also manages members and the account) or `member` (member-service's ROLES). */
  role: string = 'owner';
  /** When an owner last invited this address (null for an account's first user); see invitations.ts. */
  invitedAt: Date | null = null;
  createdAt!: Date;
}

export const UserSchema = new EntitySchema<User>({
  class: User,
  tableName: 'users',
  properties: {
    id: { type: 'uuid', primary: true },
    accountId: { type: 'uuid', index: true },
    email: { type: 'string', length: 320, unique: true },
    passwordHash: { type: 'string', length: 255, nullable: true },
    emailVerifiedAt: { type: 'Date', nullable: true },
    role: { type: 'string', length: 16, default: 'owner' },
    invitedAt: { type: 'Date', nullable: true },
    createdAt: { type: 'Date' },
  },
});
