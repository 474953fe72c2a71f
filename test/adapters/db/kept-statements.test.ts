import type { AbstractSqlConnection } from '@mikro-orm/knex';
import Database from 'libsql';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { keepStatements } from '../../../adapters/db/kept-statements.js';
import { boot } from '../../../adapters/kernel.js';
import { createLogger } from '../../../adapters/logger.js';
import { loadConfig } from '../../../config/load.js';

const root = mkdtempSync(join(tmpdir(), 'hoist-kept-statements-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

type Statement = { run(b: unknown[]): unknown; all(b: unknown[]): unknown[]; iterate(b: unknown[]): Iterator<unknown> };

/** An in-memory libsql database that keeps up to `max` statements, and how many times it really prepared. */
function counted(max: number) {
  const db = new Database(':memory:');
  const prepared: string[] = [];
  const prepare = db.prepare.bind(db);
  db.prepare = ((sql: string) => (prepared.push(sql), prepare(sql))) as typeof db.prepare;
  keepStatements(db, max);
  const statement = (sql: string) => db.prepare(sql) as unknown as Statement;
  return { db, prepared, statement };
}

test('a statement is prepared once and runs again with new bindings, after an error and a half-read result', () => {
  const { db, prepared, statement } = counted(8);
  db.exec('create table t (id integer primary key, v text unique)');
  const insert = 'insert into t (v) values (?)';
  statement(insert).run(['a']);
  statement(insert).run(['b']);
  assert.throws(() => statement(insert).run(['a']), /UNIQUE/);
  statement(insert).run(['c']);
  const select = 'select v from t where id > ? order by id';
  assert.ok(!statement(select).iterate([0]).next().done, 'one row read of three');
  assert.equal(statement(select).all([1]), [{ v: 'b' }, { v: 'c' }]);
  assert.equal(statement(select).all([0]).length, 3);
  assert.equal(prepared, [insert, select]);
});

test('a kept statement sees a changed schema', () => {
  const { db, statement } = counted(8);
  db.exec('create table t (id integer primary key); insert into t values (1)');
  assert.equal(statement('select * from t').all([]), [{ id: 1 }]);
  db.exec("alter table t add column v text default 'x'");
  assert.equal(statement('select * from t').all([]), [{ id: 1, v: 'x' }]);
});

test('beyond its cap the least recently used statement is dropped, and prepared again when it comes back', () => {
  const { prepared, statement } = counted(2);
  for (const n of [1, 2, 1, 3, 1, 2]) statement(`select ${n}`).all([]);
  // 2 is the least recently used when 3 comes: dropped; 1 stays, as it was used just before.
  assert.equal(prepared, ['select 1', 'select 2', 'select 3', 'select 2']);
});

test('every SQLite connection of the kernel keeps its statements, a replaced one too', async () => {
  const k = await boot(loadConfig({}, { dataDir: join(root, 'kernel'), db: 'sqlite', logLevel: 'silent' }), {
    log: createLogger('silent'),
  });
  try {
    const pool = (k.orm.em.getConnection() as AbstractSqlConnection).getKnex().client;
    const seen: unknown[] = [];
    for (const round of ['first', 'replaced']) {
      const conn = await pool.acquireConnection();
      try {
        assert.is(conn.prepare('select 1 as one'), conn.prepare('select 1 as one'), round);
        seen.push(conn);
        // The libsql dialect replaces a connection older than 10 s.
        conn.__created = 0;
      } finally {
        await pool.releaseConnection(conn);
      }
    }
    assert.is.not(seen[0], seen[1]);
    assert.equal(await k.orm.em.getConnection().execute('select 1 as one'), [{ one: 1 }]);
  } finally {
    await k.stop();
  }
});

test.run();
