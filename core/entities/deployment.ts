import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { ReleaseTarget } from '../ports/deployer.js';

export type { ReleaseTarget };

/** One run of the Deploy stage: a release of a build, live or not. */
export class Deployment {
  id: string = randomUUID();
  accountId!: string;
  projectId!: string;
  versionId!: string;
  buildId!: string;
  operationId!: string;
  /**
   * `running`, `live`, `superseded`, `failed` or `canceled`; a preview: `preview` while it serves on its own
   * host, `expired` once its time is up.
   */
  status: string = 'running';
  /** Deployed as a preview (its own host, the live release untouched); false once promoted. */
  preview: boolean = false;
  /** When a preview stops serving (the plan's preview_ttl_hours after it went up); null otherwise. */
  expiresAt: Date | null = null;
  target: ReleaseTarget | null = null;
  url: string | null = null;
  error: { code: string; message: string } | null = null;
  createdAt!: Date;
  liveAt: Date | null = null;
  endedAt: Date | null = null;
  /** When retention pruned it: its release directory or image is gone, and it can no longer be promoted. */
  prunedAt: Date | null = null;
}

export const DeploymentSchema = new EntitySchema<Deployment>({
  class: Deployment,
  tableName: 'deployments',
  indexes: [
    { properties: ['projectId', 'createdAt'] },
    { properties: ['projectId', 'status'] },
    // Retirement's sweep of ended releases not removed yet.
    { properties: ['prunedAt', 'endedAt'] },
  ],
  properties: {
    id: { type: 'uuid', primary: true },
    accountId: { type: 'uuid' },
    projectId: { type: 'uuid' },
    versionId: { type: 'uuid' },
    buildId: { type: 'uuid' },
    operationId: { type: 'uuid', index: true },
    status: { type: 'string', length: 16 },
    target: { type: 'json', nullable: true },
    url: { type: 'string', length: 500, nullable: true },
    error: { type: 'json', nullable: true },
    createdAt: { type: 'Date' },
    liveAt: { type: 'Date', nullable: true },
    endedAt: { type: 'Date', nullable: true },
    prunedAt: { type: 'Date', nullable: true },
    preview: { type: 'boolean', default: false },
    expiresAt: { type: 'Date', nullable: true },
  },
});
