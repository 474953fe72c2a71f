// Upload-to-live latency of a small static site on the embedded defaults (SQLite, local storage,
// in-process queue, local deployer), all three roles in this process, over real HTTP from a client in a process of
// its own (bench/upload-client.ts), so that this process's CPU is Hoist's alone.
// Run: node --import tsx bench/upload-to-live.ts [deploys] [--node] [--warmup=n]   Prints figures; never fails on the
// clock. --warmup: deploys made first and not counted (1 by default; the JIT compiler is still busy after it).
// --node deploys a dependency-free Node.js app (a start script, an http server answering its marker)
// instead; HOIST_DEPLOYER and HOIST_SANDBOX are read from the environment (HOIST_DEPLOYER=docker needs
// the Docker engine and scripts/docker-base-image.sh's image). --profile=file writes a CPU profile (.cpuprofile) of
// the counted deploys only: the warm-up deploys, start and teardown left out.
import { RequestContext } from '@mikro-orm/core';
import type { AbstractSqlConnection } from '@mikro-orm/knex';
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Session } from 'node:inspector/promises';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRoles } from '../adapters/cli/start.js';
import { boot } from '../adapters/kernel.js';
import { loadConfig } from '../config/load.js';
import { ACCOUNT_SERVICE, type AccountService } from '../core/accounts/account-service.js';
import { DEPLOYER, type Deployer } from '../core/ports/deployer.js';
import type { LocalDeployer } from '../plugins/deployer-local/local-deployer.js';
import { SANDBOX, type Sandbox } from '../core/ports/sandbox.js';
import type { UploadClient } from './upload-client.js';

const args = process.argv.slice(2);
const NODE_APP = args.includes('--node');
const DEPLOYS = Number(args.find((a) => !a.startsWith('--')) ?? 20);
const PROFILE = args.find((a) => a.startsWith('--profile='))?.slice(10);
const WARMUP = Math.max(1, Number(args.find((a) => a.startsWith('--warmup='))?.slice(9) ?? 1));
/** How many of the most frequent SQL statements are listed. */
const SQL_TOP = Number(process.env.SQL_TOP ?? 15);

/** CPU time of this process's main thread so far, in ms (Linux: its schedstat; NaN elsewhere). */
function mainThreadCpu(): number {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return NaN;
  }
}

const ms = (a: string | null, b: string | null) => (a && b ? new Date(b).getTime() - new Date(a).getTime() : NaN);

const dataDir = mkdtempSync(join(tmpdir(), 'hoist-bench-'));

/**
 * CPU to create `files` files of `bytes` in all in a new folder of the data directory, as a deploy's new blobs are
 * (written at once, no thread pool): the disk's floor under "cpu". It can differ between folders of one disk (on
 * a machine just started, files in a new folder of /tmp took 1.2 ms each at first, in one of /work 0.02 ms).
 */
function fileCreationCpu(files: number, bytes: number): number {
  const dir = mkdtempSync(join(dataDir, 'floor-'));
  const each = randomBytes(Math.floor(bytes / files));
  const cpu = process.cpuUsage();
  for (let i = 0; i < files; i++) writeFileSync(join(dir, String(i)), each, { flag: 'wx' });
  const used = process.cpuUsage(cpu);
  rmSync(dir, { recursive: true, force: true });
  return (used.user + used.system) / 1000;
}
const { HOIST_DEPLOYER, HOIST_SANDBOX } = process.env;
const config = loadConfig({ HOIST_DEPLOYER, HOIST_SANDBOX }, { dataDir, port: 0, edgePort: 0, logLevel: 'silent' });
const load0 = loadavg()[0];
const kernel = await boot(config);
// The sandbox's share: time inside sandboxed commands and release starts (the builders and the
// deployer hold this very instance). bench/sandbox.ts measures what the sandbox adds to each.
const sandbox = kernel.get<Sandbox>(SANDBOX);
let sandboxMs = 0;
let sandboxCalls = 0;
for (const method of ['run', 'serve'] as const) {
  const original = sandbox[method].bind(sandbox) as (spec: never) => Promise<unknown>;
  (sandbox as unknown as Record<string, unknown>)[method] = async (spec: never) => {
    const t = performance.now();
    sandboxCalls++;
    try {
      return await original(spec);
    } finally {
      sandboxMs += performance.now() - t;
    }
  };
}
const running = await startRoles(['api', 'worker', 'edge'], kernel);
// SQL statements this process sends (transaction control included), by their text less values.
const statements = new Map<string, number>();
let statementCount = 0;
(kernel.orm.em.getConnection() as AbstractSqlConnection).getKnex().on('query', (q: { sql: string }) => {
  statementCount++;
  const text = q.sql
    .replace(/'(?:[^']|'')*'|\b\d+\b/g, '?')
    .replace(/\s+/g, ' ')
    .slice(0, 110);
  statements.set(text, (statements.get(text) ?? 0) + 1);
});
// Every release this run made, removed at the end (a Docker release's container outlives the process).
const releases: string[] = [];
// The client, in its own process (without this one's --cpu-prof, if any).
const client = fork(new URL('./upload-client.ts', import.meta.url), [], {
  execArgv: process.execArgv.filter((a) => !a.startsWith('--cpu-prof')),
});
const calls = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
let lastCall = 0;
client.on('message', (msg: { id: number; result?: unknown; error?: string }) => {
  const call = calls.get(msg.id)!;
  calls.delete(msg.id);
  if (msg.error === undefined) call.resolve(msg.result);
  else call.reject(new Error(`client: ${msg.error}`));
});
client.on('exit', (code) => {
  for (const call of calls.values()) call.reject(new Error(`the client exited (${code})`));
});
/** Calls the client's `method`; resolves what it answers. */
function call<M extends keyof UploadClient>(
  method: M,
  ...args: Parameters<UploadClient[M]>
): Promise<Awaited<ReturnType<UploadClient[M]>>> {
  const id = ++lastCall;
  return new Promise((resolve, reject) => {
    calls.set(id, { resolve, reject });
    client.send({ id, method, args });
  });
}
try {
  const email = 'bench@example.com';
  const password = 'correct horse battery';
  await RequestContext.create(running.kernel.orm.em.fork(), () =>
    running.kernel.get<AccountService>(ACCOUNT_SERVICE).create({ email, password, plan: 'pro' }),
  );
  const site = await call('setup', running.urls.api!, running.urls.edge!, email, password, NODE_APP);

  const rows: Record<string, number>[] = [];
  let zipBytes = 0;
  // The first WARMUP deploys warm up (first use of each code path, the JIT compiler) and are not counted.
  const profiler = PROFILE ? new Session() : undefined;
  for (let i = 1 - WARMUP; i <= DEPLOYS; i++) {
    if (i === 1 && profiler) {
      profiler.connect();
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.start');
    }
    zipBytes = await call('prepare', i);
    const cpu0 = process.cpuUsage();
    const main0 = mainThreadCpu();
    const sql0 = statementCount;
    const { op, t0, t1, t2, t3 } = await call('deploy', i);
    releases.push(op.result.deployment_id);
    // The variants deployer-local makes after the switch are this deploy's CPU too (not its time to live).
    await (running.kernel.get<Deployer>(DEPLOYER) as Partial<LocalDeployer>).variantsMade?.(op.result.deployment_id);
    const cpu = process.cpuUsage(cpu0);
    const mainCpu = mainThreadCpu() - main0;
    const sql = statementCount - sql0;
    if (i <= 0) statements.clear();

    const { analyze, build, deploy } = op.stages;
    if (i <= 0) continue;
    rows.push({
      total: t3 - t0,
      upload: t1 - t0,
      queueWait:
        ms(op.created_at, analyze.started_at) +
        ms(analyze.finished_at, build.started_at) +
        ms(build.finished_at, deploy.started_at),
      analyze: ms(analyze.started_at, analyze.finished_at),
      build: ms(build.started_at, build.finished_at),
      deploy: ms(deploy.started_at, deploy.finished_at),
      server: ms(op.created_at, op.finished_at),
      eventLag: t2 - t1 - ms(op.created_at, op.finished_at),
      edge: t3 - t2,
      cpu: (cpu.user + cpu.system) / 1000,
      cpuSystem: cpu.system / 1000,
      cpuMain: mainCpu,
      sql,
    });
    process.stdout.write(`deploy ${String(i).padStart(2)}: ${(t3 - t0).toFixed(0)} ms\n`);
  }

  if (profiler) {
    const { profile } = await profiler.post('Profiler.stop');
    writeFileSync(PROFILE!, JSON.stringify(profile));
    profiler.disconnect();
  }

  const stat = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const at = (p: number) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
    return { median: at(0.5), p95: at(0.95), min: s[0], max: s[s.length - 1] };
  };
  const f = (n: number) => n.toFixed(0).padStart(7);
  console.log(
    `\nupload-to-live, ${DEPLOYS} deploys (after ${WARMUP} warm-up deploy${WARMUP > 1 ? 's' : ''}) of a ` +
      (NODE_APP ? 'dependency-free Node.js app' : `${site.files}-file static site`) +
      ` (ZIP ${(zipBytes / 1e6).toFixed(2)} MB), following its events, deployer ${config.deployer}`,
  );
  console.log(
    `load average ${load0.toFixed(1)} at start, ${loadavg()[0].toFixed(1)} at end (${availableParallelism()} cores)`,
  );
  console.log(
    `data directory ${dataDir}: creating ${site.files} files of ${Math.floor(site.siteBytes / site.files / 1000)} KB ` +
      `there takes ${fileCreationCpu(site.files, site.siteBytes).toFixed(1)} ms of CPU ` +
      "(the disk's floor under cpu; TMPDIR moves it)",
  );
  console.log(`${'ms'.padEnd(12)} ${['median', 'p95', 'min', 'max'].map((h) => h.padStart(7)).join(' ')}`);
  for (const key of Object.keys(rows[0])) {
    const s = stat(rows.map((r) => r[key]));
    console.log(`${key.padEnd(12)} ${[s.median, s.p95, s.min, s.max].map(f).join(' ')}`);
  }
  console.log(
    '\ntotal: upload start → edge serves the new marker; upload: request until the ' +
      '202; queueWait: enqueue → stage start, summed over the 3 stages;',
  );
  console.log(
    'analyze/build/deploy: stage started_at → finished_at; server: created_at → finished_at (202 → live); ' +
      'eventLag: 202 → succeeded ' +
      'seen, less created_at → finished_at; edge: succeeded seen → new page served;',
  );
  console.log(
    "cpu: CPU time of Hoist's process (the client runs in its own) per deploy, the variants made after the switch " +
      'included: the figure other load on the machine disturbs least; cpuSystem: its kernel part (file creation ' +
      'on a disk just written to and deleted from costs most of it); cpuMain: the main thread (JavaScript), the ' +
      'rest being the libuv pool (files, zlib), GC and the JIT compiler.',
  );
  console.log('sql: SQL statements sent per deploy (transaction control included); the most frequent:');
  for (const [text, n] of [...statements].sort((a, b) => b[1] - a[1]).slice(0, SQL_TOP))
    console.log(`${(n / DEPLOYS).toFixed(1).padStart(7)}  ${text}`);
  console.log(
    `sandbox (${config.sandbox}): ${sandboxCalls} sandboxed commands or starts in ` +
      `all, ${sandboxMs.toFixed(0)} ms inside them (a plain static site runs none; see ` +
      `bench/sandbox.ts)`,
  );
  // Issue 14's targets for what this run deployed, next to what it measured.
  const total = stat(rows.map((r) => r.total));
  const targets: [string, number, number][] =
    config.deployer === 'docker'
      ? NODE_APP
        ? []
        : [['static site, Docker deployer, median', total.median, 1500]]
      : NODE_APP
        ? [[`Node.js app (sandbox ${config.sandbox}), median`, total.median, 500]]
        : [
            ['upload to live, median', total.median, 80],
            ['upload to live, p95', total.p95, 150],
            ['CPU per deploy, median', stat(rows.map((r) => r.cpu)).median, 60],
            ['server part (202 → live), median', stat(rows.map((r) => r.server)).median, 30],
          ];
  if (targets.length)
    console.log(`\n${'target (issue 14)'.padEnd(38)} ${'measured'.padStart(9)} ${'target'.padStart(9)}`);
  for (const [what, value, target] of targets)
    console.log(
      `${what.padEnd(38)} ${`${value.toFixed(0)} ms`.padStart(9)} ${`< ${target} ms`.padStart(9)}  ` +
        (value < target ? 'met' : 'missed'),
    );
} finally {
  if (client.connected) client.disconnect();
  const deployer = running.kernel.get<Deployer>(DEPLOYER);
  for (const id of releases) await deployer.remove(id).catch(() => {});
  await running.close();
  rmSync(dataDir, { recursive: true, force: true });
}
