import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** Where the edge sends a live deployment's traffic. */
export type ReleaseTarget = { kind: 'static'; root: string } | { kind: 'http'; url: string };

/** One run of the Deploy stage: a release of a build, live or not. */
export class Deployment {
  id: string = randomUUID();
  accountId!: string;
  projectId!: string;
  versionId!: string;
  buildId!: string;
  operationId!: string;
  /** `running`, `live`, `superseded`, `failed` or `canceled`. */
  status: string = 'running';
  target: ReleaseTarget | null = null;
  url: string | null = null;
  error: { code: string; message: string } | null = null;
  createdAt: Date = new Date();
  liveAt: Date | null = null;
  endedAt: Date | null = null;
}

export const DeploymentSchema = new EntitySchema<Deployment>({
  class: Deployment,
  tableName: 'deployments',
  indexes: [{ properties: ['projectId', 'createdAt'] }, { properties: ['projectId', 'status'] }],
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
    createdAt: { type: 'datetime' },
    liveAt: { type: 'datetime', nullable: true },
    endedAt: { type: 'datetime', nullable: true },
  },
});
