import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

export type OneTimePurpose = 'verify_email' | 'reset_password';

/** A one-time, expiring secret sent by mail; only its SHA-256 hash is stored. */
export class OneTimeToken {
  id: string = randomUUID();
  userId!: string;
  purpose!: OneTimePurpose;
  tokenHash!: string;
  expiresAt!: Date;
  usedAt: Date | null = null;
  createdAt!: Date;
}

export const OneTimeTokenSchema = new EntitySchema<OneTimeToken>({
  class: OneTimeToken,
  tableName: 'one_time_tokens',
  properties: {
    id: { type: 'uuid', primary: true },
    userId: { type: 'uuid', index: true },
    purpose: { type: 'string', length: 32 },
    tokenHash: { type: 'string', length: 64, unique: true },
    expiresAt: { type: 'Date' },
    usedAt: { type: 'Date', nullable: true },
    createdAt: { type: 'Date' },
  },
});
