import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** A public request for an account; an admin approves it with `hoist access-requests approve`. */
export class AccessRequest {
  id: string = randomUUID();
  email!: string;
  name: string | null = null;
  message: string | null = null;
  /** `pending` or `approved`. */
  status: string = 'pending';
  createdAt!: Date;
  approvedAt: Date | null = null;
}

export const AccessRequestSchema = new EntitySchema<AccessRequest>({
  class: AccessRequest,
  tableName: 'access_requests',
  properties: {
    id: { type: 'uuid', primary: true },
    email: { type: 'string', length: 320, unique: true },
    name: { type: 'string', length: 200, nullable: true },
    message: { type: 'text', nullable: true },
    status: { type: 'string', length: 16 },
    createdAt: { type: 'Date' },
    approvedAt: { type: 'Date', nullable: true },
  },
});
