import type { FastifyRequest } from 'fastify';
import { invalid } from '../../core/errors.js';

const NUL = '\u0000';

/**
 * The dotted path of the first string in `value` (an object key included) that holds U+0000, or
 * null when none does. Buffers and streams are not looked into: they are bytes, not text.
 */
export function nulPath(value: unknown, path = ''): string | null {
  if (typeof value === 'string') return value.includes(NUL) ? path : null;
  if (
    value === null ||
    typeof value !== 'object' ||
    Buffer.isBuffer(value) ||
    typeof (value as { pipe?: unknown }).pipe === 'function'
  )
    return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nulPath(value[i], path ? `${path}.${i}` : String(i));
      if (found !== null) return found;
    }
    return null;
  }
  for (const [key, item] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key;
    if (key.includes(NUL)) return at.replace(/\u0000/g, '\\u0000');
    const found = nulPath(item, at);
    if (found !== null) return found;
  }
  return null;
}

/** Throws 400 invalid_request naming `field` when `text` holds U+0000 (multipart text parts, file names). */
export function refuseNulIn(text: string | undefined, field: string, where: string): void {
  if (text?.includes(NUL)) throw nulError(field, where);
}

/**
 * preValidation hook of every API route: a NUL character in the JSON body, the query string or a
 * path parameter is 400 invalid_request naming the field, before schemas, handlers or the
 * database see it (PostgreSQL refuses U+0000 in text, SQLite cuts strings at it). Multipart text
 * parts are read by their route (upload-ingest.ts checks each); a header holding it never gets
 * here, since Node's HTTP parser refuses it.
 */
export function refuseNul(req: FastifyRequest, _reply: unknown, done: (err?: Error) => void): void {
  for (const [where, value] of [
    ['params', req.params],
    ['querystring', req.query],
    ['body', req.body],
  ] as const) {
    const field = nulPath(value);
    if (field !== null) return done(nulError(field || where, where));
  }
  done();
}

const nulError = (field: string, where: string) =>
  invalid(`${where} ${field} must not contain the NUL character (U+0000)`, { field });
