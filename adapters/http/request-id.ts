import { randomFillSync } from 'node:crypto';

const ID_BYTES = 12;
const POOL_BYTES = ID_BYTES * 1024;
const pool = Buffer.alloc(POOL_BYTES);
let at = POOL_BYTES;

/**
 * A fresh request id, `req_` and 12 random bytes in base64url. The bytes come from a pool refilled 1,024 ids at a
 * time: one call to the random source per request cost more than the rest of an id.
 */
export function requestId(): string {
  if (at === POOL_BYTES) {
    randomFillSync(pool);
    at = 0;
  }
  const id = `req_${pool.toString('base64url', at, at + ID_BYTES)}`;
  at += ID_BYTES;
  return id;
}
