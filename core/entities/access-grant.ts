import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** An e-mail address granted access to a private project's site. */
export class AccessGrant {
  id: string = randomUUID();
  projectId!: string;
  /** Trimmed and lower-cased. */
  email!: string;
  createdAt!: Date;
}

export const AccessGrantSchema = new EntitySchema<AccessGrant>({
  class: AccessGrant,
  tableName: 'access_grants',
  uniques: [{ properties: ['projectId', 'email'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    projectId: { type: 'uuid', index: true },
    email: { type: 'string', length: 320 },
    createdAt: { type: 'Date' },
  },
});
