import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../config/load.js';
import type { HoistConfig } from '../../config/schema.js';
import { boot, type Kernel } from '../../adapters/kernel.js';
import { createLogger } from '../../adapters/logger.js';
import type { Deps, Resolved } from '../../core/tokens.js';
import { backendsFromEnv } from './backends.js';

/** The database leg this test process runs on: HOIST_TEST_DB=sqlite (default) or postgres. */
export const testDb = (process.env.HOIST_TEST_DB ?? 'sqlite') as 'sqlite' | 'postgres';
export const pgUrl = process.env.HOIST_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Creates an empty PostgreSQL database for one kernel; returns its URL and a function that drops it. */
export async function freshPgDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `hoist_t_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(pgUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

/**
 * A kernel on a fresh data directory and a fresh database of the current leg, on the backends the
 * environment names (see backends.ts); `stop` removes all of them.
 */
export async function testKernel(overrides: Partial<HoistConfig> = {}): Promise<Kernel> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hoist-test-'));
  const db = testDb === 'postgres' ? await freshPgDatabase() : null;
  const backends = backendsFromEnv();
  const config = loadConfig(
    {},
    {
      dataDir,
      db: testDb,
      databaseUrl: db?.url,
      logLevel: process.env.HOIST_TEST_LOG ?? 'silent',
      port: 0,
      edgePort: 0,
      // Counted as everywhere, but tests poll faster than any client should (rate-limit.test.ts tries the limit).
      apiRequestsPerMinute: 100_000,
      ...backends.overrides,
      ...overrides,
    },
  );
  const kernel = await boot(config, { log: createLogger(config.logLevel) });
  const stop = kernel.stop;
  kernel.stop = async () => {
    const projects = await backends.projectsOf(kernel).catch(() => []);
    await stop();
    await backends.cleanup(projects);
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  return kernel;
}

/** A plugin's `deps` resolved from a kernel: to build another instance of it (a restart in a test). */
export function resolvedDeps<D extends Deps>(kernel: Kernel, deps: D): Resolved<D> {
  return Object.fromEntries(Object.entries(deps).map(([k, t]) => [k, kernel.get(t)])) as Resolved<D>;
}
