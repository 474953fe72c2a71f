import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/**
 * A file an account sent through a manifest upload, kept in Storage by its hash (`files/<account>/sha256/<hex>`)
 * so later manifests need not send it again (core/uploads/kept-files.ts). The row is the account's claim on
 * the object: its size counts against the plan's kept_file_bytes, and it goes kept_file_days after `lastUsedAt`.
 */
export class KeptFile {
  id: string = randomUUID();
  accountId!: string;
  sha256!: string;
  size!: number;
  /** The last manifest or upload that used it. */
  lastUsedAt!: Date;
  /** The object is in Storage; false while it is being written, or when a sweep may have removed it meanwhile. */
  stored: boolean = false;
  /** Which writer may set `stored` (the last to claim it); a sweep clears it. */
  claim: string | null = null;
}

export const KeptFileSchema = new EntitySchema<KeptFile>({
  class: KeptFile,
  tableName: 'kept_files',
  uniques: [{ properties: ['accountId', 'sha256'] }],
  indexes: [{ properties: ['accountId', 'lastUsedAt'] }, { properties: ['lastUsedAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    accountId: { type: 'uuid' },
    sha256: { type: 'string', length: 64 },
    size: { type: 'integer' },
    lastUsedAt: { type: 'Date' },
    stored: { type: 'boolean' },
    claim: { type: 'uuid', nullable: true },
  },
});
