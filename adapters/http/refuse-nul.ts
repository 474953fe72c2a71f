import type { FastifyRequest } from 'fastify';
import { invalid } from '../../core/errors.js';

const NUL = '\u0000';

/**
 * The dotted path of the first string in `value` (an object key included) that holds U+0000, or
 * null when none does. Buffers and streams are not looked into: they are bytes, not text. It walks
 * with a stack of its own, not by recursion: a body of a few MB can nest millions of levels deep,
 * which recursion answered with a stack overflow (a 500).
 */
export function nulPath(value: unknown, path = ''): string | null {
  // What is left to look at, last first: a value, its path, and whether its own key holds NUL.
  const left: [unknown, string, boolean][] = [[value, path, false]];
  while (left.length) {
    const [v, at, badKey] = left.pop()!;
    if (badKey) return at.replace(/\u0000/g, '\\u0000');
    if (typeof v === 'string') {
      if (v.includes(NUL)) return at;
      continue;
    }
    if (
      v === null ||
      typeof v !== 'object' ||
      Buffer.isBuffer(v) ||
      typeof (v as { pipe?: unknown }).pipe === 'function'
    )
      continue;
    const entries: [string, unknown][] = Array.isArray(v) ? v.map((item, i) => [String(i), item]) : Object.entries(v);
    // Pushed last to first, so that they are looked at in order.
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, item] = entries[i];
      left.push([item, at ? `${at}.${key}` : key, !Array.isArray(v) && key.includes(NUL)]);
    }
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
