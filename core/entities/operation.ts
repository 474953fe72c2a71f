import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** A parent (aggregate) operation: a deployment chain or a project deletion. */
export class Operation {
  id: string = randomUUID();
  accountId!: string;
  projectId: string | null = null;
  /** `deploy` or `delete_project`. */
  kind!: string;
  /** `queued`, `running`, `succeeded`, `failed` or `canceled`. */
  status: string = 'queued';
  progress: number = 0;
  error: { code: string; message: string } | null = null;
  /** The state machine's full state (children, attempt, timestamps) for deployments. */
  state: Record<string, unknown> | null = null;
  /** Bumped by every write; writers compare-and-set on it so a late worker cannot overwrite newer state. */
  revision: number = 0;
  /** The version a deployment operation ships. */
  versionId: string | null = null;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
  finishedAt: Date | null = null;
}

export const OperationSchema = new EntitySchema<Operation>({
  class: Operation,
  tableName: 'operations',
  indexes: [{ properties: ['projectId', 'status'] }, { properties: ['accountId'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    accountId: { type: 'uuid' },
    projectId: { type: 'uuid', nullable: true },
    kind: { type: 'string', length: 32 },
    status: { type: 'string', length: 16 },
    progress: { type: 'integer' },
    error: { type: 'json', nullable: true },
    state: { type: 'json', nullable: true },
    revision: { type: 'integer' },
    versionId: { type: 'uuid', nullable: true },
    createdAt: { type: 'datetime' },
    updatedAt: { type: 'datetime', onUpdate: () => new Date() },
    finishedAt: { type: 'datetime', nullable: true },
  },
});
