// Generates the next migration for both dialects from the entity schemas:
//   node --import tsx scripts/make-migration.ts
// PostgreSQL is needed at HOIST_TEST_PG_URL (default postgres://postgres@127.0.0.1:5432/test).
import { MikroORM } from '@mikro-orm/core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../config/load.js';
import { ormOptions } from '../adapters/db/orm.js';
import { entitiesOf, plugins } from '../adapters/plugins.js';

const base = process.env.HOIST_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const dbName = `hoist_mig_${process.pid}`;
const admin = new pg.Client({ connectionString: base });
await admin.connect();
await admin.query(`create database ${dbName}`);
const dir = mkdtempSync(join(tmpdir(), 'hoist-mig-'));
try {
  for (const db of ['sqlite', 'postgres'] as const) {
    const url = new URL(base);
    url.pathname = `/${dbName}`;
    const config = loadConfig({}, { db, dataDir: dir, databaseUrl: url.toString() });
    const orm = await MikroORM.init(await ormOptions(config, entitiesOf(plugins)));
    const migrator = orm.getMigrator();
    await migrator.up();
    const made = await migrator.createMigration();
    console.log(db, made.fileName || '(no changes)');
    await orm.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
  await admin.query(`drop database ${dbName} with (force)`);
  await admin.end();
}
