/** A connection that prepares statements (a libsql Database). */
export interface Preparing {
  prepare(sql: string): unknown;
}

/** How many statements a connection keeps by default. */
export const KEPT_STATEMENTS = 256;

/**
 * Makes `conn` keep the statements it prepares, by their SQL, up to `max` (the least recently used dropped first).
 * The libsql dialect prepares every query anew, about 50 µs each here, longer than most of Hoist's queries run. A
 * libsql statement runs again with new bindings (reset first, after an error or a half-read result too), and SQLite
 * prepares it again itself when the schema changed.
 */
export function keepStatements(conn: Preparing, max = KEPT_STATEMENTS): void {
  const kept = new Map<string, unknown>();
  const prepare = conn.prepare.bind(conn);
  conn.prepare = (sql: string) => {
    let statement = kept.get(sql);
    if (statement !== undefined) kept.delete(sql);
    else statement = prepare(sql);
    kept.set(sql, statement);
    if (kept.size > max) kept.delete(kept.keys().next().value!);
    return statement;
  };
}
