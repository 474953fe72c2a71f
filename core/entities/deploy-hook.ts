import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { StartedBy } from './operation.js';

/** A secret URL that builds a project's live version again when anything POSTs to it (a CMS, a scheduler). */
export class DeployHook {
  id: string = randomUUID();
  accountId!: string;
  projectId!: string;
  name!: string;
  /** SHA-256 (hex) of the URL's token: the token itself is shown once, when the hook is made. */
  tokenHash!: string;
  /** Who made it (null: made before it was recorded). The hook stays the account's when that member leaves. */
  createdBy: StartedBy | null = null;
  createdAt!: Date;
  lastTriggeredAt: Date | null = null;
}

export const DeployHookSchema = new EntitySchema<DeployHook>({
  class: DeployHook,
  tableName: 'deploy_hooks',
  properties: {
    id: { type: 'uuid', primary: true },
    accountId: { type: 'uuid' },
    projectId: { type: 'uuid', index: true },
    name: { type: 'string', length: 100 },
    tokenHash: { type: 'string', length: 64, unique: true },
    createdBy: { type: 'json', nullable: true },
    createdAt: { type: 'Date' },
    lastTriggeredAt: { type: 'Date', nullable: true },
  },
});
