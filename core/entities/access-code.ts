import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** A one-time sign-in code mailed to a granted address; only its HMAC (SiteAccessService) is stored. */
export class AccessCode {
  id: string = randomUUID();
  projectId!: string;
  grantId!: string;
  codeHash!: string;
  /** Tries made so far; the code is dead after the fifth. */
  attempts: number = 0;
  expiresAt!: Date;
  createdAt!: Date;
}

export const AccessCodeSchema = new EntitySchema<AccessCode>({
  class: AccessCode,
  tableName: 'access_codes',
  indexes: [{ properties: ['projectId', 'grantId'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    projectId: { type: 'uuid' },
    grantId: { type: 'uuid' },
    codeHash: { type: 'string', length: 255 },
    attempts: { type: 'integer' },
    expiresAt: { type: 'Date' },
    createdAt: { type: 'Date' },
  },
});
