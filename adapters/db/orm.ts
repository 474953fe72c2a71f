import { MikroORM, type EntitySchema, type Options } from '@mikro-orm/core';
import { Migrator } from '@mikro-orm/migrations';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HoistConfig } from '../../config/schema.js';
import { secretFile } from '../data-dir.js';
import { keepStatements, type Preparing } from './kept-statements.js';
import { resolveContext } from './request-scope.js';

const here = dirname(fileURLToPath(import.meta.url));

/** The database plugins: `sqlite` (embedded file in the data directory) and `postgres`. */
export const databases = ['sqlite', 'postgres'] as const;

/**
 * MikroORM options for the configured database and `entities` (core's and the plugins', see
 * `entitiesOf` in adapters/plugins.ts); throws naming the key when the database cannot be used.
 */
export async function ormOptions(config: HoistConfig, entities: EntitySchema[]): Promise<Options> {
  const common: Partial<Options> = {
    entities,
    extensions: [Migrator],
    allowGlobalContext: false,
    forceUtcTimezone: true,
    debug: false,
    // The API's requests fork their entity manager on first use (request-scope.ts).
    context: resolveContext,
    discovery: { warnWhenNoEntities: true },
  };
  if (config.db === 'sqlite') {
    const { LibSqlDriver } = await import('@mikro-orm/libsql');
    mkdirSync(config.dataDir, { recursive: true });
    const dbName = join(config.dataDir, 'hoist.sqlite');
    // Created 0600 before SQLite opens it: it holds password hashes and sessions, and SQLite gives
    // its -wal and -shm files the database file's mode.
    secretFile(dbName);
    // WAL lets the API read while the worker writes; busy_timeout waits for a lock instead of failing. The driver's
    // calls block the process: with synchronous=full every commit would hold the edge and the API while the disk
    // syncs (sqliteSynchronous). Set on every connection the pool opens: the libsql dialect replaces a connection
    // older than 10 s, and a new one would start with SQLite's defaults (no busy wait, synchronous=full). Each
    // connection keeps its prepared statements (kept-statements.ts).
    const pragmas =
      'pragma journal_mode = wal; pragma busy_timeout = 5000; ' +
      `pragma synchronous = ${config.sqliteSynchronous === 'full' ? 'full' : 'normal'};`;
    return {
      ...common,
      driver: LibSqlDriver,
      dbName,
      pool: {
        afterCreate: (conn: Preparing & { exec(sql: string): void }, done: (err: unknown, conn: unknown) => void) => {
          try {
            conn.exec(pragmas);
            keepStatements(conn);
            done(null, conn);
          } catch (err) {
            done(err, conn);
          }
        },
      },
      migrations: migrations('sqlite'),
    } as Options;
  }
  if (config.db === 'postgres') {
    if (!config.databaseUrl) throw new Error('db plugin postgres: databaseUrl (HOIST_DATABASE_URL) is required');
    const { PostgreSqlDriver } = await import('@mikro-orm/postgresql');
    return {
      ...common,
      driver: PostgreSqlDriver,
      clientUrl: config.databaseUrl,
      migrations: migrations('postgres'),
    } as Options;
  }
  throw new Error(`unknown db plugin ${JSON.stringify(config.db)} (HOIST_DB); known: ${databases.join(', ')}`);
}

function migrations(dialect: string): Options['migrations'] {
  const path = join(here, 'migrations', dialect);
  return {
    path,
    pathTs: path,
    glob: '!(*.d).{js,ts}',
    emit: 'ts',
    snapshot: false,
    transactional: true,
    allOrNothing: true,
    silent: true,
  };
}

/** Connects with `entities` and applies every pending migration. */
export async function openDatabase(config: HoistConfig, entities: EntitySchema[]): Promise<MikroORM> {
  const orm = await MikroORM.init(await ormOptions(config, entities));
  await orm.getMigrator().up();
  return orm;
}
