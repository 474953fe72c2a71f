import type { EntityManager } from '@mikro-orm/core';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../config/load.js';
import { boot, type Kernel } from '../../adapters/kernel.js';
import { createLogger } from '../../adapters/logger.js';
import { freshPgDatabase, testDb } from './kernel.js';

/** The repository root and the real `hoist` executable. */
export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const hoistBin = join(root, 'bin', 'hoist.js');

/** What one `hoist` run printed and how it exited. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface TestCli {
  /** The environment every run gets: a fresh data directory and database of the current leg. */
  env: NodeJS.ProcessEnv;
  dataDir: string;
  /** A kernel in this process on the same database and data directory. */
  kernel: Kernel;
  /** Runs `node bin/hoist.js ...args`, writing `input` (if any) to its stdin, and waits for it. */
  run(args: string[], input?: string): Promise<CliResult>;
  /** Starts `node bin/hoist.js ...args` and leaves it running. */
  spawn(args: string[]): ChildProcess;
  /** Runs `fn` on a fresh EntityManager of the same database, to check what the CLI wrote. */
  query<T>(fn: (em: EntityManager) => Promise<T>): Promise<T>;
  /** Removes the data directory and drops the database. */
  close(): Promise<void>;
}

/**
 * A `hoist` command line on its own data directory (and, on the postgres leg, its own database),
 * plus a kernel in this process on the same database, booted first so the migrations run once.
 */
export async function testCli(): Promise<TestCli> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hoist-cli-'));
  const db = testDb === 'postgres' ? await freshPgDatabase() : null;
  const env: NodeJS.ProcessEnv = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('HOIST_')),
  );
  Object.assign(
    env,
    { HOIST_DATA_DIR: dataDir, HOIST_DB: testDb, HOIST_LOG_LEVEL: 'warn' },
    db ? { HOIST_DATABASE_URL: db.url } : {},
  );
  const kernel = await boot(loadConfig(env), { log: createLogger('silent') });
  const start = (args: string[]) =>
    spawn(process.execPath, [hoistBin, ...args], { cwd: root, env, stdio: ['pipe', 'pipe', 'pipe'] });
  return {
    env,
    dataDir,
    kernel,
    spawn: start,
    run: (args, input) => finished(start(args), input),
    query: (fn) => fn(kernel.orm.em.fork()),
    async close() {
      await kernel.stop();
      await db?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Writes `input` (if any) to the child's stdin and collects what it prints until it exits. */
export function finished(child: ChildProcess, input?: string): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  child.stdin!.end(input);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
