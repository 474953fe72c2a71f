import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** Summary of a build log kept on the record, so polling never reads the whole log. */
export interface LogSummary {
  lastLines: string[];
  warnings: number;
  errors: number;
  bytes: number;
}

/** One run of the Build stage for a version; its artifact is immutable and content-addressed. */
export class Build {
  id: string = randomUUID();
  accountId!: string;
  projectId!: string;
  versionId!: string;
  operationId!: string;
  /** `running`, `succeeded`, `failed` or `canceled`. */
  status: string = 'running';
  /** Storage key of the artifact: a packed build output, or the upload itself when nothing was built. */
  artifactKey: string | null = null;
  /**
   * The folder of the artifact ZIP that is the release's root, as Archive.inspect's `rootDirectory`
   * (after its one top-level folder is unwrapped); null for the whole ZIP. Set when the upload is the artifact.
   */
  artifactRoot: string | null = null;
  artifactSha256: string | null = null;
  artifactSize: number | null = null;
  logKey: string | null = null;
  log: LogSummary = { lastLines: [], warnings: 0, errors: 0, bytes: 0 };
  error: { code: string; message: string } | null = null;
  createdAt!: Date;
  finishedAt: Date | null = null;
  /** When FileRetention removed the artifact from Storage (no retained release used it); not deployable again. */
  artifactRemovedAt: Date | null = null;
  /** When FileRetention removed the stored log (older than buildLogDays, of no retained release). */
  logRemovedAt: Date | null = null;
}

export const BuildSchema = new EntitySchema<Build>({
  class: Build,
  tableName: 'builds',
  indexes: [{ properties: ['projectId', 'createdAt'] }, { properties: ['accountId'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    accountId: { type: 'uuid' },
    projectId: { type: 'uuid' },
    versionId: { type: 'uuid' },
    operationId: { type: 'uuid', index: true },
    status: { type: 'string', length: 16 },
    artifactKey: { type: 'string', length: 300, nullable: true, index: true },
    artifactRoot: { type: 'string', length: 1100, nullable: true },
    artifactSha256: { type: 'string', length: 64, nullable: true },
    artifactSize: { type: 'integer', nullable: true },
    logKey: { type: 'string', length: 300, nullable: true },
    log: { type: 'json' },
    error: { type: 'json', nullable: true },
    createdAt: { type: 'Date' },
    finishedAt: { type: 'Date', nullable: true },
    artifactRemovedAt: { type: 'Date', nullable: true },
    logRemovedAt: { type: 'Date', nullable: true },
  },
});
