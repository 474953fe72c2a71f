import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** A job of the `queue-local` plugin: kept in the database so it survives a restart. */
export class JobRow {
  id: string = randomUUID();
  topic!: string;
  /** De-duplication key; unique among jobs not yet done. */
  key: string | null = null;
  payload: unknown = {};
  /** `waiting` or `running`; finished jobs are deleted. */
  state: string = 'waiting';
  availableAt: Date = new Date();
  leaseUntil: Date | null = null;
  leaseOwner: string | null = null;
  deliveries: number = 0;
  createdAt: Date = new Date();
}

export const JobRowSchema = new EntitySchema<JobRow>({
  class: JobRow,
  tableName: 'jobs',
  indexes: [{ properties: ['topic', 'state', 'availableAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    topic: { type: 'string', length: 64 },
    key: { type: 'string', length: 200, nullable: true, unique: true },
    payload: { type: 'json' },
    state: { type: 'string', length: 16 },
    availableAt: { type: 'Date' },
    leaseUntil: { type: 'Date', nullable: true },
    leaseOwner: { type: 'string', length: 64, nullable: true },
    deliveries: { type: 'integer' },
    createdAt: { type: 'Date' },
  },
});
