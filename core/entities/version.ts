import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** Options given with an upload; each overrides the project's settings for this version. */
export interface UploadOptions {
  root_directory?: string;
  skip_build?: boolean;
  runtime?: string;
  framework?: string;
  /** true: the account's build cache is dropped before the build, which starts without one. */
  clear_cache?: boolean;
  /** `preview`: deployed to its own host, the live release untouched (absent: production). */
  target?: 'preview';
}

/** An uploaded archive of a project and, once analyzed, what was detected in it. */
export class Version {
  id: string = randomUUID();
  accountId!: string;
  projectId!: string;
  operationId!: string;
  filename: string | null = null;
  archiveKey!: string;
  archiveSize!: number;
  archiveSha256!: string;
  options: UploadOptions = {};
  /** The Analyze result (runtime, framework, output dir, file count, sizes, warnings, reasons). */
  analysis: Record<string, unknown> | null = null;
  createdAt!: Date;
  /** When FileRetention removed the archive from Storage (no retained release used it); it cannot be built again. */
  archiveRemovedAt: Date | null = null;
}

export const VersionSchema = new EntitySchema<Version>({
  class: Version,
  tableName: 'versions',
  indexes: [{ properties: ['projectId', 'createdAt'] }, { properties: ['accountId'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    accountId: { type: 'uuid' },
    projectId: { type: 'uuid' },
    operationId: { type: 'uuid', index: true },
    filename: { type: 'string', length: 255, nullable: true },
    archiveKey: { type: 'string', length: 300 },
    archiveSize: { type: 'integer' },
    archiveSha256: { type: 'string', length: 64 },
    options: { type: 'json' },
    analysis: { type: 'json', nullable: true },
    createdAt: { type: 'Date' },
    archiveRemovedAt: { type: 'Date', nullable: true },
  },
});
