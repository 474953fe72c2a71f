// What the side-by-side benches share: Hoist with its three roles in this process on a fresh data
// directory, an account signed in, deploys through the API, and wrk runs parsed into requests per second.
import { RequestContext } from '@mikro-orm/core';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRoles, type Running } from '../adapters/cli/start.js';
import { boot } from '../adapters/kernel.js';
import { loadConfig } from '../config/load.js';
import type { HoistConfig } from '../config/schema.js';
import { ACCOUNT_SERVICE, type AccountService } from '../core/accounts/account-service.js';
import { Deployment } from '../core/entities/deployment.js';
import type { ReleaseTarget } from '../core/ports/deployer.js';
import { zipOf } from '../test/helpers/live.js';

/** Hoist running for a bench, signed in as one account. */
export interface BenchHoist {
  running: Running;
  api: string;
  /** The edge's origin (http://127.0.0.1:port). */
  edge: string;
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

/** Boots Hoist (embedded defaults, or what `config` overrides) and signs an account in. */
export async function startBenchHoist(
  env: NodeJS.ProcessEnv = {},
  config: Partial<HoistConfig> = {},
): Promise<BenchHoist> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hoist-bench-'));
  const kernel = await boot(loadConfig(env, { dataDir, port: 0, edgePort: 0, logLevel: 'silent', ...config }));
  const running = await startRoles(['api', 'worker', 'edge'], kernel);
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
    api,
    edge: running.urls.edge!.replace('localhost', '127.0.0.1'),
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

/** Runs wrk against `url` with `headers`; resolves requests per second (and non-2xx/3xx answers, which void it). */
export async function wrk(
  url: string,
  headers: Record<string, string> = {},
  opts: { threads?: number; connections?: number; seconds?: number } = {},
): Promise<{ rps: number; errors: number }> {
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
  const errors = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  return { rps, errors };
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

/** A case measured side by side: Hoist's request, its counterpart's, and the least ratio the issue asks for. */
export interface SideBySideCase {
  name: string;
  hoist: WrkTarget;
  other: WrkTarget;
  target: number;
}

/**
 * Runs each case's pair `rounds` times, Hoist then its counterpart, and prints a table of the median
 * requests per second, their ratio and the target, under `title` and the load average since `load0`.
 */
export async function sideBySide(title: string, cases: SideBySideCase[], rounds: number, load0: number) {
  const rows: { name: string; hoist: number; other: number; errors: number; target: number }[] = [];
  for (const c of cases) {
    const h: number[] = [];
    const o: number[] = [];
    let errors = 0;
    for (let r = 0; r < rounds; r++) {
      const a = await wrk(...c.hoist);
      const b = await wrk(...c.other);
      h.push(a.rps);
      o.push(b.rps);
      errors += a.errors + b.errors;
    }
    rows.push({ name: c.name, hoist: median(h), other: median(o), errors, target: c.target });
    process.stdout.write(`${c.name}: ${median(h).toFixed(0)} vs ${median(o).toFixed(0)} req/s\n`);
  }
  console.log(`\n${title}: wrk -t2 -c50 -d5s, ${rounds} alternating rounds, median`);
  console.log(
    `load average ${load0.toFixed(1)} at start, ${loadavg()[0].toFixed(1)} at end (${availableParallelism()} cores)`,
  );
  const head = ['hoist req/s', 'other req/s', 'ratio', 'target', ''];
  console.log(`${'case'.padEnd(32)} ${head.map((x) => x.padStart(11)).join(' ')}`);
  for (const r of rows) {
    const ratio = r.hoist / r.other;
    const verdict = r.errors ? `${r.errors} bad answers` : ratio >= r.target ? 'met' : 'missed';
    const cells = [r.hoist.toFixed(0), r.other.toFixed(0), `${ratio.toFixed(2)}×`, `≥ ${r.target}×`, verdict];
    console.log(`${r.name.padEnd(32)} ${cells.map((x) => x.padStart(11)).join(' ')}`);
  }
}
