// What the side-by-side benches share: Hoist with its roles in this process on a fresh data directory,
// an account signed in, deploys through the API, an edge in a process of its own (`hoist edge`), and
// wrk runs parsed into requests per second, and the CPU each server process spent per request.
import { RequestContext } from '@mikro-orm/core';
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRoles, type Role, type Running } from '../adapters/cli/start.js';
import { boot } from '../adapters/kernel.js';
import { loadConfig } from '../config/load.js';
import type { HoistConfig } from '../config/schema.js';
import { ACCOUNT_SERVICE, type AccountService } from '../core/accounts/account-service.js';
import { Deployment } from '../core/entities/deployment.js';
import type { ReleaseTarget } from '../core/ports/deployer.js';
import type { Sandbox } from '../core/ports/sandbox.js';
import { plugins } from '../adapters/plugins.js';
import { hoistBin, root } from '../test/helpers/cli.js';
import { freePort } from '../test/helpers/hoist-process.js';
import { zipOf } from '../test/helpers/live.js';

/** Hoist running for a bench, signed in as one account. */
export interface BenchHoist {
  running: Running;
  /** The data directory every role shares (an edge process started apart serves it too). */
  dataDir: string;
  api: string;
  /** The origin (http://127.0.0.1:port) of the edge in this process, when `roles` has one. */
  edge: string | undefined;
  /** `authorization: Bearer ...` of the account. */
  auth: Record<string, string>;
  /** Creates a project (`body` as POST /api/v1/projects/ takes it), deploys `files` to it and waits until live. */
  deploy(body: Record<string, unknown>, files: Record<string, string | Buffer>): Promise<DeployedProject>;
  close(): Promise<void>;
}

export interface DeployedProject {
  id: string;
  /** The project's host, for the Host header of requests to the edge. */
  host: string;
  operationId: string;
  /** Where the live release answers: its directory, or the app's own address. */
  target: ReleaseTarget;
}

/** Boots Hoist's `roles` (embedded defaults, or what `config` overrides) and signs an account in. */
export async function startBenchHoist(
  env: NodeJS.ProcessEnv = {},
  config: Partial<HoistConfig> = {},
  roles: Role[] = ['api', 'worker', 'edge'],
): Promise<BenchHoist> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hoist-bench-'));
  // The request limit is counted, as in production, but never reached: the benches send far more than any client.
  const limits = { apiRequestsPerMinute: 1e9 };
  const kernel = await boot(
    loadConfig(env, { dataDir, port: 0, edgePort: 0, logLevel: 'silent', ...limits, ...config }),
  );
  const running = await startRoles(roles, kernel);
  const api = running.urls.api!;
  const email = 'bench@example.com';
  const password = 'correct horse battery';
  await RequestContext.create(kernel.orm.em.fork(), () =>
    kernel.get<AccountService>(ACCOUNT_SERVICE).create({ email, password, plan: 'pro' }),
  );
  const login = await fetch(`${api}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  }).then((r) => r.json());
  const auth = { authorization: `Bearer ${login.token}` };
  const call = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(`${api}${path}`, { ...init, headers: { ...auth, ...init.headers } });
    const body = await res.json();
    if (res.status >= 300) throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${JSON.stringify(body)}`);
    return body;
  };
  return {
    running,
    dataDir,
    api,
    edge: running.urls.edge?.replace('localhost', '127.0.0.1'),
    auth,
    async deploy(body, files) {
      const project = await call('/api/v1/projects/', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(await zipOf(files))]), 'site.zip');
      const accepted = await call(`/api/v1/projects/${project.id}/local-to-live`, { method: 'POST', body: form });
      for (;;) {
        const op = await call(`/api/v1/operations/${accepted.operation.id}`);
        if (op.status === 'succeeded') break;
        if (op.status !== 'running') throw new Error(`deploy of ${body.name} ${op.status}: ${JSON.stringify(op)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const live = await kernel.orm.em.fork().findOneOrFail(Deployment, { projectId: project.id, status: 'live' });
      return {
        id: project.id,
        host: new URL(project.url).host,
        operationId: accepted.operation.id,
        target: live.target!,
      };
    },
    async close() {
      await running.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A `hoist edge` process (bin/hoist.js, the built dist/): its public origin and its admin (health, metrics) origin. */
export interface EdgeProcess {
  origin: string;
  admin: string;
  child: ChildProcess;
  close(): Promise<void>;
}

/**
 * Starts `node bin/hoist.js edge` on `dataDir` (embedded defaults unless `env` says otherwise), as an
 * operator runs it: it loads its routing table from the database when it starts. Needs `npm run build`.
 */
export async function startEdgeProcess(
  dataDir: string,
  env: NodeJS.ProcessEnv = {},
  nodeArgs: string[] = [],
): Promise<EdgeProcess> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('HOIST_')));
  const child = spawn(process.execPath, [...nodeArgs, hoistBin, 'edge'], {
    cwd: root,
    env: {
      ...clean,
      HOIST_DATA_DIR: dataDir,
      HOIST_EDGE_PORT: String(await freePort()),
      HOIST_EDGE_ADMIN_PORT: String(await freePort()),
      HOIST_LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const [origin, admin] = await new Promise<[string, string]>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d;
      const m = /hoist edge listening on (http:\/\/\S+) \(health and metrics on (http:\/\/\S+)\)/.exec(out);
      if (m) resolve([m[1], m[2]]);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d) => (out += d));
    child.once('exit', (code) => reject(new Error(`hoist edge exited with ${code}: ${out}`)));
  });
  const loopback = (u: string) => u.replace('localhost', '127.0.0.1');
  return {
    origin: loopback(origin),
    admin: loopback(admin),
    child,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/**
 * Runs wrk against `url` with `headers`; resolves requests per second, the requests answered (and non-2xx/3xx
 * answers, which void it).
 */
export async function wrk(
  url: string,
  headers: Record<string, string> = {},
  opts: { threads?: number; connections?: number; seconds?: number } = {},
): Promise<{ rps: number; requests: number; errors: number }> {
  const args = [`-t${opts.threads ?? 2}`, `-c${opts.connections ?? 50}`, `-d${opts.seconds ?? 5}s`];
  // wrk adds its own Host unless one is spelled `Host`: two would be a 400.
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k === 'host' ? 'Host' : k}: ${v}`);
  args.push(url);
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (c) => (text += c));
    child.on('error', reject).on('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`wrk: ${code}`))));
  });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
  const errors = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  return { rps, requests, errors };
}

/** Process `pid`'s parent and the CPU time (µs, user and system, all threads) it has used so far, from /proc. */
export function procStat(pid: number): { ppid: number; cpu: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Past the command's name (which may hold spaces): state, ppid, ... utime (12th), stime (13th), in 10 ms ticks.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) * 10_000 };
}

/** The ids of the processes running now. */
export const pidsNow = () =>
  readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number);

/** Process `pid` and its children (an nginx master and its worker). */
export function withChildren(pid: number): number[] {
  const found = [pid];
  for (const other of pidsNow()) {
    try {
      if (procStat(other).ppid === pid) found.push(other);
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** Runs wrk on `at`; resolves its answer and, with `pids`, the CPU those processes spent per request (µs). */
async function measured(at: WrkTarget, pids: number[] | undefined) {
  const cpu = () => (pids ?? []).reduce((sum, pid) => sum + procStat(pid).cpu, 0);
  const before = cpu();
  const run = await wrk(...at);
  return { ...run, perRequest: pids?.length ? (cpu() - before) / run.requests : NaN };
}

/** One request with node:http (fetch drops the Host header); resolves the status, headers and body. */
export function httpRequest(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: opts.method ?? 'GET', headers: opts.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res
        .on('data', (c) => (body += c))
        .on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject).end(opts.body);
  });
}

/** The median of `xs`. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** Random text of `bytes` characters (base64), for files of a known size. */
export const filler = (bytes: number) =>
  randomBytes(Math.ceil((bytes * 3) / 4))
    .toString('base64')
    .slice(0, bytes);

/** One request of a side-by-side case: the URL and the headers wrk sends. */
export type WrkTarget = [url: string, headers: Record<string, string>];

/**
 * A server Hoist is measured against: its label, its request, and the least ratio the issue asks for (if any); with
 * `pids`, its processes, whose CPU per request is printed too.
 */
export interface Counterpart {
  label: string;
  at: WrkTarget;
  pids?: number[];
  target?: number;
  /** A ceiling (a bare server): the table also prints its own ratio to the other counterparts. */
  ceiling?: boolean;
}

/** A case measured side by side: Hoist's request (and its processes, as a counterpart's) and its counterparts'. */
export interface SideBySideCase {
  name: string;
  hoist: WrkTarget;
  hoistPids?: number[];
  others: Counterpart[];
}

/**
 * Runs each case `rounds` times, Hoist then each counterpart in turn, and prints a table of the median
 * requests per second, Hoist's ratio to each counterpart and the target, under `title` and the load
 * average since `load0`; a ceiling's row also gives its ratio to the case's other counterparts. Where both sides
 * name their processes, the row also gives the median CPU each spent per request (µs): on a machine whose cores the
 * load generator shares, steadier than requests per second.
 */
export async function sideBySide(title: string, cases: SideBySideCase[], rounds: number, load0: number) {
  const lines: string[] = [];
  const cell = (x: string, w = 11) => x.padStart(w);
  for (const c of cases) {
    const h: number[] = [];
    const hCpu: number[] = [];
    const o = c.others.map(() => [] as number[]);
    const oCpu = c.others.map(() => [] as number[]);
    const errors = c.others.map(() => 0);
    let hoistErrors = 0;
    for (let r = 0; r < rounds; r++) {
      const a = await measured(c.hoist, c.hoistPids);
      h.push(a.rps);
      hCpu.push(a.perRequest);
      hoistErrors += a.errors;
      for (const [i, other] of c.others.entries()) {
        const b = await measured(other.at, other.pids);
        o[i].push(b.rps);
        oCpu[i].push(b.perRequest);
        errors[i] += b.errors;
      }
    }
    const hoist = median(h);
    const hoistCpu = median(hCpu);
    const others = o.map(median);
    process.stdout.write(`${c.name}: ${hoist.toFixed(0)} vs ${others.map((x) => x.toFixed(0)).join(' / ')} req/s\n`);
    lines.push(c.name);
    for (const [i, other] of c.others.entries()) {
      const ratio = hoist / others[i];
      const bad = hoistErrors + errors[i];
      const verdict = bad ? `${bad} bad answers` : other.target ? (ratio >= other.target ? 'met' : 'missed') : '';
      const target = other.target ? `≥ ${other.target}×` : '';
      const otherCpu = median(oCpu[i]);
      const cpu =
        Number.isNaN(hoistCpu) || Number.isNaN(otherCpu) ? '' : `${hoistCpu.toFixed(1)} / ${otherCpu.toFixed(1)}`;
      const cells = [hoist.toFixed(0), others[i].toFixed(0), `${ratio.toFixed(2)}×`, target, verdict, cpu];
      lines.push(`  vs ${other.label.padEnd(40)} ${cells.map((x) => cell(x)).join(' ')}`);
      if (other.ceiling)
        for (const [j, them] of c.others.entries())
          if (j !== i)
            lines.push(
              `     (${other.label} / ${them.label}: ${others[i].toFixed(0)} / ${others[j].toFixed(0)} req/s, ` +
                `${(others[i] / others[j]).toFixed(2)}×)`,
            );
    }
  }
  console.log(`\n${title}: wrk -t2 -c50 -d5s, ${rounds} alternating rounds, median`);
  console.log(
    `load average ${load0.toFixed(1)} at start, ${loadavg()[0].toFixed(1)} at end (${availableParallelism()} cores)`,
  );
  const head = ['hoist req/s', 'other req/s', 'ratio', 'target', '', 'CPU µs/req'];
  console.log(`${'case'.padEnd(43)} ${head.map((x) => cell(x)).join(' ')}`);
  for (const l of lines) console.log(l);
  console.log("CPU µs/req: CPU time of Hoist's process / of the other server's (nginx: master and worker) per request");
}

/**
 * The sandbox `HOIST_SANDBOX` names (bwrap by default), prepared, keeping its files in a fresh data directory
 * (0711, as Hoist's is), with the configuration it was made from.
 */
export async function benchSandbox(
  prefix: string,
): Promise<{ dataDir: string; config: HoistConfig; sandbox: Sandbox }> {
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dataDir, 0o711);
  const config = loadConfig(process.env, { dataDir });
  const definition = plugins.find((p) => p.port === 'sandbox' && p.name === config.sandbox)!;
  const sandbox = (await definition.create({ config, log: { warn: () => {} } })) as Sandbox;
  await sandbox.prepare();
  return { dataDir, config, sandbox };
}
