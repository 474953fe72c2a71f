import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Client } from 'minio';
import type { HoistConfig } from '../../config/schema.js';

/** s3rver's fixed credentials. */
const ACCESS_KEY = 'S3RVER';
const SECRET_KEY = 'S3RVER';

/** A real S3-protocol server (s3rver) on loopback, in a process of its own, its data in a temp directory. */
export interface S3Server {
  /** http://127.0.0.1:<port> */
  endpoint: string;
  accessKey: string;
  secretKey: string;
  /** A client of it, for what tests check behind Hoist's back. */
  client: Client;
  /** The storage-minio configuration for `bucket` (created at start when `createBucket`, the default). */
  config(bucket: string, createBucket?: boolean): Partial<HoistConfig>;
  /** Multipart uploads still open in `bucket` (none after a clean run), as `<key> <uploadId>`. */
  pendingUploads(bucket: string): Promise<string[]>;
  /** Moves an open upload's start (its Initiated time) `ms` into the past. */
  ageUpload(bucket: string, uploadId: string, ms: number): Promise<void>;
  /** Stops the server and removes its data. */
  close(): Promise<void>;
}

/**
 * The Node flags s3rver needs: its continuation tokens (a listing longer than one page) are DES-encrypted, a cipher
 * OpenSSL 3 keeps in its legacy provider; without it the second page of a listing is a 500.
 */
export const S3RVER_NODE_FLAGS = ['--openssl-legacy-provider'];

/**
 * Starts s3rver (see s3-server-process.ts for the few S3 calls added to it, and its verification
 * of Signature Version 4, which s3rver lacks) on port 0 over a fresh temp directory, and resolves
 * once it listens.
 */
export async function startS3Server(): Promise<S3Server> {
  const dir = mkdtempSync(join(tmpdir(), 'hoist-s3-'));
  const child = spawn(
    process.execPath,
    [...S3RVER_NODE_FLAGS, '--import', 'tsx', fileURLToPath(new URL('./s3-server-process.ts', import.meta.url)), dir],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  // The server ends with this process, whatever way it ends (the child exits when its stdin closes).
  process.once('exit', () => child.kill());
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the S3 server exited (${code}) before it listened`)));
    createInterface({ input: child.stdout! }).once('line', (line) => resolve(JSON.parse(line).port));
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new Client({
    endPoint: '127.0.0.1',
    port,
    useSSL: false,
    accessKey: ACCESS_KEY,
    secretKey: SECRET_KEY,
    region: 'us-east-1',
  });
  return {
    endpoint,
    accessKey: ACCESS_KEY,
    secretKey: SECRET_KEY,
    client,
    config: (bucket, createBucket = true) => ({
      storage: 'minio',
      s3Endpoint: endpoint,
      s3AccessKey: ACCESS_KEY,
      s3SecretKey: SECRET_KEY,
      s3Bucket: bucket,
      s3CreateBucket: createBucket,
    }),
    async pendingUploads(bucket) {
      const lister = client as unknown as {
        listIncompleteUploadsQuery(...a: string[]): Promise<{ uploads: { key: string; uploadId: string }[] }>;
      };
      const { uploads } = await lister.listIncompleteUploadsQuery(bucket, '', '', '', '');
      return uploads.map((u) => `${u.key} ${u.uploadId}`);
    },
    async ageUpload(bucket, uploadId, ms) {
      const at = new Date(Date.now() - ms);
      await utimes(join(dir, bucket, '._S3rver_uploads', uploadId, 'key'), at, at);
    },
    async close() {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
