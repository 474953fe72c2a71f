import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** A parent (aggregate) operation: a deployment chain or a project deletion. */
export class Operation {
  id: string = randomUUID();
  accountId!: string;
  projectId: string | null = null;
  /** `deploy`, `promote` or `delete_project`. */
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
  /** What started a deployment: `upload`, `upload_session`, `promote` or `retry` (null: before it was recorded). */
  source: string | null = null;
  /** Who started it (null: not recorded, e.g. an operation older than the field). */
  startedBy: StartedBy | null = null;
  /**
   * Set while the chain is held for its account's share of the workers (AccountShare): its first stage is not
   * enqueued until one of the account's other chains ends.
   */
  heldSince: Date | null = null;
  createdAt!: Date;
  updatedAt!: Date;
  finishedAt: Date | null = null;
}

/** The kinds of operation that run a deployment chain (Analyze → Build → Deploy, or Deploy alone for a promote). */
export const CHAIN_KINDS = ['deploy', 'promote'];

/** The user (and the e-mail it had then) who started an operation. */
export interface StartedBy {
  user_id: string;
  email: string;
}

export const OperationSchema = new EntitySchema<Operation>({
  class: Operation,
  tableName: 'operations',
  // (accountId | projectId, createdAt, id): GET /operations pages newest first by keyset, per account or project.
  indexes: [
    { properties: ['projectId', 'status'] },
    { properties: ['accountId'] },
    { properties: ['accountId', 'createdAt', 'id'] },
    { properties: ['projectId', 'createdAt', 'id'] },
  ],
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
    source: { type: 'string', length: 16, nullable: true },
    startedBy: { type: 'json', nullable: true },
    versionId: { type: 'uuid', nullable: true },
    heldSince: { type: 'Date', nullable: true },
    createdAt: { type: 'Date' },
    updatedAt: { type: 'Date' },
    finishedAt: { type: 'Date', nullable: true },
  },
});
