import { RequestContext } from '@mikro-orm/core';
import http from 'node:http';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { boot, type Kernel } from '../../adapters/kernel.js';
import { createLogger } from '../../adapters/logger.js';
import { loadConfig } from '../../config/load.js';
import { ACCOUNT_SERVICE, type AccountService } from '../../core/accounts/account-service.js';
import { hoistBin, root } from './cli.js';
import { processesRunning } from './gated-build.js';
import { freshPgDatabase } from './kernel.js';
import { dropStream, natsUrl, uniqueStream } from './nats.js';

/** One `hoist <role>` process and the address it printed (API or edge URL, worker health URL). */
export interface RoleProcess {
  child: ChildProcess;
  url: string;
  output(): string;
}

/** Hoist as separate role processes on PostgreSQL and NATS JetStream (a stream of its own). */
export interface Cluster {
  env: NodeJS.ProcessEnv;
  dataDir: string;
  /** A kernel in this process on the same database and stream (for checks and set-up). */
  kernel: Kernel;
  /** Starts `hoist <role>` and waits until it says it runs. */
  start(role: 'api' | 'worker' | 'edge'): Promise<RoleProcess>;
  /** Creates an account (plan team: five concurrent builds) and logs in through `api`; returns the bearer token. */
  login(api: string, plan?: string): Promise<string>;
  /** Kills every process it started (and `extra` pids), drops the database and the stream. */
  close(extra?: number[]): Promise<void>;
}

/** Starts nothing yet: makes the database, the stream name and a data directory shared by every role. */
export async function cluster(overrides: NodeJS.ProcessEnv = {}): Promise<Cluster> {
  const db = await freshPgDatabase();
  const stream = uniqueStream();
  const dataDir = mkdtempSync(join(tmpdir(), 'hoist-roles-'));
  const env: NodeJS.ProcessEnv = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('HOIST_')),
  );
  Object.assign(env, {
    HOIST_DATA_DIR: dataDir,
    HOIST_DB: 'postgres',
    HOIST_DATABASE_URL: db.url,
    HOIST_QUEUE: 'nats',
    HOIST_NATS_URL: natsUrl,
    HOIST_NATS_STREAM: stream,
    HOIST_PORT: '0',
    HOIST_EDGE_PORT: '0',
    HOIST_WORKER_PORT: '0',
    HOIST_EDGE_ADMIN_PORT: '0',
    HOIST_LOG_LEVEL: 'warn',
    ...overrides,
  });
  const kernel = await boot(loadConfig(env), { log: createLogger('silent') });
  const children: ChildProcess[] = [];
  let n = 0;
  return {
    env,
    dataDir,
    kernel,
    start(role) {
      const child = spawn(process.execPath, [hoistBin, role], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      let out = '';
      return new Promise((resolve, reject) => {
        const onData = (d: Buffer) => {
          out += d;
          const m =
            role === 'worker'
              ? /hoist worker running \(.*health on (http:\/\/\S+?)\)/.exec(out)
              : new RegExp(`hoist ${role} listening on (http://\\S+)`).exec(out);
          if (m) resolve({ child, url: m[1], output: () => out });
        };
        child.stdout!.on('data', onData);
        child.stderr!.on('data', (d) => (out += d));
        child.on('exit', (code) => reject(new Error(`hoist ${role} exited with ${code}: ${out}`)));
      });
    },
    async login(api, plan = 'team') {
      const email = `roles${++n}-${process.pid}@example.com`;
      const password = 'correct horse battery';
      await RequestContext.create(kernel.orm.em.fork(), () =>
        kernel.get<AccountService>(ACCOUNT_SERVICE).create({ email, password, plan }),
      );
      const res = await fetch(`${api}/api/v1/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password }),
      });
      return (await res.json()).token;
    },
    async close(extra = []) {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      for (const pid of extra) killQuietly(pid);
      await kernel.stop();
      await db.drop();
      await dropStream(natsUrl, stream);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Sends SIGKILL to `pid` if it still runs. */
export function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

const parentOf = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
};

/**
 * The processes whose command line starts with `command` (a build's, e.g. `node gate.js <gate id>`;
 * unique to its project), each with the first of `among` it descends from (null when none).
 */
export function processesOf(command: string, among: number[]): { pid: number; ancestor: number | null }[] {
  const found: { pid: number; ancestor: number | null }[] = [];
  for (const pid of processesRunning(command)) {
    try {
      let p = pid;
      while (p > 1 && !among.includes(p)) p = parentOf(p);
      found.push({ pid, ancestor: among.includes(p) ? p : null });
    } catch {
      // the process ended while we looked
    }
  }
  return found;
}

/**
 * Waits until `cond` holds, checking every 100 ms; fails naming `what` after `ms` (a function: asked then, to say what
 * the wait found).
 */
export const until = async (
  cond: () => boolean | Promise<boolean>,
  what: string | (() => string | Promise<string>),
  ms = 60_000,
) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting: ${typeof what === 'string' ? what : await what()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

/** The body an edge process answers at `/` for the project host `host` (a name, without the port). */
export const siteBody = (edge: RoleProcess, host: string) =>
  new Promise<string>((resolve, reject) => {
    const url = new URL(edge.url);
    http
      .get(
        { host: url.hostname, port: url.port, path: '/', headers: { host: `${host}:${url.port}` }, timeout: 10_000 },
        (res) => {
          let body = '';
          res.on('data', (d) => (body += d)).on('end', () => resolve(body));
        },
      )
      .on('timeout', function (this: http.ClientRequest) {
        this.destroy(new Error(`the edge did not answer ${host} within 10 s`));
      })
      .on('error', reject);
  });
