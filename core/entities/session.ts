import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** One issued REST token (its `jti`); revoked by logout or a password reset. */
export class Session {
  id: string = randomUUID();
  userId!: string;
  createdAt!: Date;
  expiresAt!: Date;
  revokedAt: Date | null = null;
  userAgent: string | null = null;
  address: string | null = null;
}

export const SessionSchema = new EntitySchema<Session>({
  class: Session,
  tableName: 'sessions',
  properties: {
    id: { type: 'uuid', primary: true },
    userId: { type: 'uuid', index: true },
    createdAt: { type: 'Date' },
    expiresAt: { type: 'Date' },
    revokedAt: { type: 'Date', nullable: true },
    userAgent: { type: 'string', length: 512, nullable: true },
    address: { type: 'string', length: 64, nullable: true },
  },
});
