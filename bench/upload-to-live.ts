// Upload-to-live latency of a small static site on the embedded defaults (SQLite, local storage,
// in-process queue, local deployer), all three roles in this process, over real HTTP.
// Run: node --import tsx bench/upload-to-live.ts [deploys] [--node] [--warmup=n]   Prints figures; never fails on the
// clock. --warmup: deploys made first and not counted (1 by default; the JIT compiler is still busy after it).
// --node deploys a dependency-free Node.js app (a start script, an http server answering its marker)
// instead; HOIST_DEPLOYER and HOIST_SANDBOX are read from the environment (HOIST_DEPLOYER=docker needs
// the Docker engine and scripts/docker-base-image.sh's image).
import { RequestContext } from '@mikro-orm/core';
import type { AbstractSqlConnection } from '@mikro-orm/knex';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import yazl from 'yazl';
import { startRoles } from '../adapters/cli/start.js';
import { boot } from '../adapters/kernel.js';
import { loadConfig } from '../config/load.js';
import { ACCOUNT_SERVICE, type AccountService } from '../core/accounts/account-service.js';
import { DEPLOYER, type Deployer } from '../core/ports/deployer.js';
import type { LocalDeployer } from '../plugins/deployer-local/local-deployer.js';
import { SANDBOX, type Sandbox } from '../core/ports/sandbox.js';
import { sseEvents } from '../client/operation-stream.js';

const args = process.argv.slice(2);
const NODE_APP = args.includes('--node');
const DEPLOYS = Number(args.find((a) => !a.startsWith('--')) ?? 20);
const WARMUP = Math.max(1, Number(args.find((a) => a.startsWith('--warmup='))?.slice(9) ?? 1));
const SITE_BYTES = 1_000_000;
const FILES = 50;
/** How many of the most frequent SQL statements are listed. */
const SQL_TOP = Number(process.env.SQL_TOP ?? 15);

/** A ZIP of the given files, in memory. */
function zipOf(files: [string, Buffer][]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, bytes] of files) zip.addBuffer(bytes, name);
  zip.end();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    zip.outputStream
      .on('data', (c: Buffer) => chunks.push(c))
      .on('end', () => resolve(Buffer.concat(chunks)))
      .on('error', reject);
  });
}

/** A ZIP of index.html (carrying `marker`) and 49 assets, about SITE_BYTES in all, half of them random binary. */
function siteZip(marker: string): Promise<Buffer> {
  const each = Math.floor(SITE_BYTES / FILES);
  const files: [string, Buffer][] = [
    [
      'index.html',
      Buffer.from(`<!doctype html><title>${marker}</title><p>${marker}</p>${'<p>filler</p>'.repeat(each / 13)}`),
    ],
  ];
  for (let i = 1; i < FILES; i++) {
    const raw = randomBytes(i % 2 ? each : Math.ceil((each * 3) / 4));
    // Odd files are incompressible images; even ones base64 text that deflates to about 3/4.
    files.push([i % 2 ? `img/a${i}.png` : `js/a${i}.js`, i % 2 ? raw : Buffer.from(raw.toString('base64'))]);
  }
  return zipOf(files);
}

/** A ZIP of a dependency-free Node.js app (a start script) whose server answers every request with `marker`. */
function nodeAppZip(marker: string): Promise<Buffer> {
  const pkg = { name: 'bench-app', version: '1.0.0', scripts: { start: 'node server.js' } };
  const server =
    `require('http').createServer((req, res) => res.end(${JSON.stringify(marker)}))` +
    `.listen(Number(process.env.PORT), '127.0.0.1');\n`;
  return zipOf([
    ['package.json', Buffer.from(JSON.stringify(pkg))],
    ['server.js', Buffer.from(server)],
  ]);
}

// node:http with keep-alive, not fetch: the client shares this process with Hoist, and fetch costs it
// about 1.5 ms more CPU per request, which would be charged to Hoist.
const agent = new http.Agent({ keepAlive: true });

/** One HTTP request; resolves the status and the body as text. */
function request(
  url: URL,
  opts: { method?: string; headers?: Record<string, string | number>; body?: Buffer } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: opts.method ?? 'GET',
        headers: opts.headers,
        agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res
          .on('data', (c) => chunks.push(c))
          .on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject).end(opts.body);
  });
}

/**
 * Follows an operation's event stream (`Accept: text/event-stream`, as `hoist deploy` does) until its state is no
 * longer running; resolves that state.
 */
function follow(url: URL, headers: Record<string, string>): Promise<any> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, path: url.pathname, headers: { ...headers, accept: 'text/event-stream' } },
      (res) => {
        void (async () => {
          for await (const e of sseEvents(res)) {
            const op = e.event === 'state' ? JSON.parse(e.data) : null;
            if (op && op.status !== 'running' && op.status !== 'queued') return op;
          }
          throw new Error(`the event stream of ${url.pathname} ended early (${res.statusCode})`);
        })().then(
          (op) => (req.destroy(), resolve(op)),
          (err) => (req.destroy(), reject(err)),
        );
      },
    );
    req.on('error', reject).end();
  });
}

/** A multipart/form-data body with the ZIP in the part `file`. */
function multipart(zip: Buffer): { body: Buffer; type: string } {
  const boundary = `----hoistbench${randomBytes(8).toString('hex')}`;
  const head =
    `--${boundary}\r\ncontent-disposition: form-data; name="file"; ` +
    `filename="site.zip"\r\ncontent-type: application/zip\r\n\r\n`;
  return {
    body: Buffer.concat([Buffer.from(head), zip, Buffer.from(`\r\n--${boundary}--\r\n`)]),
    type: `multipart/form-data; boundary=${boundary}`,
  };
}

/** CPU time of this process's main thread so far, in ms (Linux: its schedstat; NaN elsewhere). */
function mainThreadCpu(): number {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return NaN;
  }
}

const ms = (a: string | null, b: string | null) => (a && b ? new Date(b).getTime() - new Date(a).getTime() : NaN);
const sleep = (n: number) => new Promise((r) => setTimeout(r, n));

const dataDir = mkdtempSync(join(tmpdir(), 'hoist-bench-'));

/**
 * CPU to create FILES files of the site's size in a new folder of the data directory, as a deploy's new blobs are
 * (written at once, no thread pool): the disk's floor under "cpu". It can differ between folders of one disk (on
 * a machine just started, files in a new folder of /tmp took 1.2 ms each at first, in one of /work 0.02 ms).
 */
function fileCreationCpu(): number {
  const dir = mkdtempSync(join(dataDir, 'floor-'));
  const bytes = randomBytes(Math.floor(SITE_BYTES / FILES));
  const cpu = process.cpuUsage();
  for (let i = 0; i < FILES; i++) writeFileSync(join(dir, String(i)), bytes, { flag: 'wx' });
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
const api = running.urls.api!;
const edge = new URL(running.urls.edge!);
// Every release this run made, removed at the end (a Docker release's container outlives the process).
const releases: string[] = [];
const json = async (res: Promise<{ status: number; body: string }>) => {
  const { status, body } = await res;
  return { status, body: JSON.parse(body) };
};
try {
  const email = 'bench@example.com';
  const password = 'correct horse battery';
  await RequestContext.create(running.kernel.orm.em.fork(), () =>
    running.kernel.get<AccountService>(ACCOUNT_SERVICE).create({ email, password, plan: 'pro' }),
  );
  const post = (path: string, headers: Record<string, string>, body: Buffer) =>
    json(request(new URL(path, api), { method: 'POST', headers: { ...headers, 'content-length': body.length }, body }));
  const login = await post(
    '/api/v1/auth/login',
    { 'content-type': 'application/json' },
    Buffer.from(JSON.stringify({ email, password })),
  );
  const auth = { authorization: `Bearer ${login.body.token}` };
  const project = (
    await post(
      '/api/v1/projects/',
      { ...auth, 'content-type': 'application/json' },
      Buffer.from(JSON.stringify({ name: 'bench site' })),
    )
  ).body;
  const host = new URL(project.url).host;

  const rows: Record<string, number>[] = [];
  let zipBytes = 0;
  // The first WARMUP deploys warm up (first use of each code path, the JIT compiler) and are not counted.
  for (let i = 1 - WARMUP; i <= DEPLOYS; i++) {
    const marker = `release-${i}-${randomBytes(4).toString('hex')}`;
    const zip = await (NODE_APP ? nodeAppZip : siteZip)(marker);
    zipBytes = zip.length;
    const form = multipart(zip);

    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const main0 = mainThreadCpu();
    const sql0 = statementCount;
    const accepted = await post(
      `/api/v1/projects/${project.id}/local-to-live`,
      { ...auth, 'content-type': form.type },
      form.body,
    );
    if (accepted.status !== 202) throw new Error(`upload ${i}: ${accepted.status} ${JSON.stringify(accepted.body)}`);
    const t1 = performance.now();
    const opUrl = new URL(`/api/v1/operations/${accepted.body.operation.id}`, api);
    const op = await follow(opUrl, auth);
    if (op.status !== 'succeeded')
      throw new Error(`deploy ${i} ${op.status}: ${JSON.stringify(op.error ?? op.stages)}`);
    const t2 = performance.now();
    releases.push(op.result.deployment_id);
    while (!(await request(edge, { headers: { host } })).body.includes(marker)) await sleep(1);
    const t3 = performance.now();
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

  const stat = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const at = (p: number) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
    return { median: at(0.5), p95: at(0.95), min: s[0], max: s[s.length - 1] };
  };
  const f = (n: number) => n.toFixed(0).padStart(7);
  console.log(
    `\nupload-to-live, ${DEPLOYS} deploys (after ${WARMUP} warm-up deploy${WARMUP > 1 ? 's' : ''}) of a ` +
      (NODE_APP ? 'dependency-free Node.js app' : `${FILES}-file static site`) +
      ` (ZIP ${(zipBytes / 1e6).toFixed(2)} MB), following its events, deployer ${config.deployer}`,
  );
  console.log(
    `load average ${load0.toFixed(1)} at start, ${loadavg()[0].toFixed(1)} at end (${availableParallelism()} cores)`,
  );
  console.log(
    `data directory ${dataDir}: creating ${FILES} files of ${Math.floor(SITE_BYTES / FILES / 1000)} KB there ` +
      `takes ${fileCreationCpu().toFixed(1)} ms of CPU (the disk's floor under cpu; TMPDIR moves it)`,
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
    'cpu: CPU time of this process (server and client) per deploy, the variants made after the switch ' +
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
  agent.destroy();
  const deployer = running.kernel.get<Deployer>(DEPLOYER);
  for (const id of releases) await deployer.remove(id).catch(() => {});
  await running.close();
  rmSync(dataDir, { recursive: true, force: true });
}
