import { invalid } from '../errors.js';

/** A position in a list ordered by (createdAt, id). */
export interface Keyset {
  createdAt: Date;
  id: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** True for a lower-case UUID (the ids Hoist issues). */
export const isUuid = (s: string) => UUID.test(s);

/** The opaque cursor of a keyset: base64url of `[createdAt ISO, id]`. */
export function encodeCursor(k: Keyset): string {
  return Buffer.from(JSON.stringify([k.createdAt.toISOString(), k.id])).toString('base64url');
}

/** The keyset of a cursor made by encodeCursor; throws invalid_request (field `cursor`) for anything else. */
export function decodeCursor(cursor: string): Keyset {
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && UUID.test(v[1])) {
      const createdAt = new Date(v[0]);
      if (!Number.isNaN(createdAt.getTime()) && createdAt.toISOString() === v[0]) return { createdAt, id: v[1] };
    }
  } catch {
    // fall through: not base64url JSON
  }
  throw invalid('cursor is not a cursor this list returned', { field: 'cursor' });
}
