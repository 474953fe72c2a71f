import { EntitySchema } from '@mikro-orm/core';

/** The remembered answer to a write sent with an Idempotency-Key (per account, 24 h). */
export class IdempotencyRecord {
  /** `<accountId>:<key>`. */
  id!: string;
  requestHash!: string;
  status!: number;
  body!: unknown;
  createdAt!: Date;
}

export const IdempotencyRecordSchema = new EntitySchema<IdempotencyRecord>({
  class: IdempotencyRecord,
  tableName: 'idempotency_records',
  properties: {
    id: { type: 'string', length: 300, primary: true },
    requestHash: { type: 'string', length: 64 },
    status: { type: 'integer' },
    body: { type: 'json' },
    createdAt: { type: 'Date', index: true },
  },
});
