import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { UploadOptions } from './version.js';

/** How the ZIP reaches an upload session: one multipart POST through the API, or resumable chunks. */
export type UploadTransport = 'proxied_multipart' | 'direct_storage_resumable';

export const UPLOAD_TRANSPORTS = [
  'proxied_multipart',
  'direct_storage_resumable',
] as const satisfies readonly UploadTransport[];

/**
 * A received piece of a resumable upload, in upload order. Local storage keeps each as the object
 * `key`; an S3 multipart upload (the session's `multipartUploadId`) records its part `number` and `etag`.
 */
export interface UploadPart {
  number: number;
  size: number;
  key?: string;
  etag?: string;
}

/**
 * A short-lived, one-time upload URL of an account: what to deploy (an existing project, or a
 * project name to create or select, with upload options) and, for the resumable transport, how far
 * the upload has come. Only the SHA-256 of the URL's token is stored.
 */
export class UploadSession {
  id: string = randomUUID();
  accountId!: string;
  /** The user who opened it (null: opened before it was recorded); removing that member expires it. */
  userId: string | null = null;
  tokenHash!: string;
  /** The project to deploy to; null when `name` selects or creates it at upload time. */
  projectId: string | null = null;
  name: string | null = null;
  visibility: string | null = null;
  options: UploadOptions = {};
  filename: string | null = null;
  transport!: UploadTransport;
  /** The ZIP's size as declared at creation (required for the resumable transport). */
  declaredSize: number | null = null;
  /** Bytes received so far (resumable transport). */
  offset: number = 0;
  parts: UploadPart[] = [];
  /** Where the whole ZIP is stored once received. */
  storageKey!: string;
  /** The S3 multipart upload behind a resumable session, when Storage is S3. */
  multipartUploadId: string | null = null;
  /** The deployment the upload started. */
  operationId: string | null = null;
  expiresAt!: Date;
  /** Set once, by compare-and-set, when the URL is spent. */
  usedAt: Date | null = null;
  createdAt!: Date;
}

export const UploadSessionSchema = new EntitySchema<UploadSession>({
  class: UploadSession,
  tableName: 'upload_sessions',
  indexes: [{ properties: ['accountId', 'expiresAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    accountId: { type: 'uuid' },
    userId: { type: 'uuid', nullable: true },
    tokenHash: { type: 'string', length: 64, unique: true },
    projectId: { type: 'uuid', nullable: true },
    name: { type: 'string', length: 100, nullable: true },
    visibility: { type: 'string', length: 16, nullable: true },
    options: { type: 'json' },
    filename: { type: 'string', length: 255, nullable: true },
    transport: { type: 'string', length: 32 },
    declaredSize: { type: 'integer', nullable: true },
    // "offset" is an SQL keyword.
    offset: { type: 'integer', fieldName: 'received_bytes' },
    parts: { type: 'json' },
    storageKey: { type: 'string', length: 300 },
    multipartUploadId: { type: 'string', length: 1024, nullable: true },
    operationId: { type: 'uuid', nullable: true },
    expiresAt: { type: 'Date' },
    usedAt: { type: 'Date', nullable: true },
    createdAt: { type: 'Date' },
  },
});
