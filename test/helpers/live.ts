import http from 'node:http';
import yazl from 'yazl';
import { startRoles, type Running } from '../../adapters/cli/start.js';
import type { HoistConfig } from '../../config/schema.js';
import { ACCOUNT_SERVICE, type AccountService } from '../../core/accounts/account-service.js';
import { RequestContext } from '@mikro-orm/core';
import { testKernel } from './kernel.js';

/** A ZIP (yazl) of the given files, as bytes. */
export function zipOf(files: Record<string, string | Buffer>): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, body] of Object.entries(files))
    zip.addBuffer(Buffer.isBuffer(body) ? body : Buffer.from(body), name, { mtime: new Date(0) });
  zip.end();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    zip.outputStream
      .on('data', (c: Buffer) => chunks.push(c))
      .on('end', () => resolve(Buffer.concat(chunks)))
      .on('error', reject);
  });
}

/** Hoist running all three roles over real sockets, with helpers that speak HTTP to it. */
export interface LiveHoist {
  running: Running;
  /** Hoist's data directory (builds' workspaces are under its `work/`). */
  dataDir: string;
  api: string;
  edge: string;
  /** Creates an account (plan pro unless given) and returns its bearer token. */
  login(plan?: string): Promise<{ token: string; accountId: string }>;
  /** POST a multipart upload to `path` with `fields` and the ZIP in the part `file`. */
  upload(
    token: string,
    path: string,
    zip: Buffer | null,
    fields?: Record<string, string>,
    headers?: Record<string, string>,
  ): Promise<Response>;
  /** GETs JSON from the API. */
  get(token: string, path: string): Promise<{ status: number; body: any }>;
  /** POSTs to the API with no body. */
  post(token: string, path: string): Promise<{ status: number; body: any }>;
  /** Any method on the API, with a JSON body when given; the answer's JSON (null when empty). */
  call(token: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** Polls the operation until it is terminal (or `until` holds); returns its last view. */
  waitFor(token: string, operationId: string, until?: (op: any) => boolean, ms?: number): Promise<any>;
  /** GET on the edge with a Host header. */
  site(
    host: string,
    path?: string,
    headers?: Record<string, string>,
  ): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>;
  close(): Promise<void>;
}

let n = 0;

/** How long one request of these helpers may take: a hang fails its test with a message, not the file timeout. */
const REQUEST_MS = 60_000;

/** Starts api, worker and edge on a fresh kernel (ports chosen by the OS). */
export async function liveHoist(overrides: Partial<HoistConfig> = {}): Promise<LiveHoist> {
  const kernel = await testKernel({ stuckAfterSeconds: 3, ...overrides });
  const running = await startRoles(['api', 'worker', 'edge'], kernel);
  const api = running.urls.api!;
  const edge = running.urls.edge!;
  const json = async (res: Response) => ({
    status: res.status,
    body: res.headers.get('content-type')?.includes('json') ? await res.json() : await res.text(),
  });
  const self: LiveHoist = {
    running,
    dataDir: kernel.config.dataDir,
    api,
    edge,
    async login(plan = 'pro') {
      const email = `live${++n}-${process.pid}@example.com`;
      const password = 'correct horse battery';
      const { account } = await RequestContext.create(kernel.orm.em.fork(), () =>
        kernel.get<AccountService>(ACCOUNT_SERVICE).create({ email, password, plan }),
      );
      const res = await fetch(`${api}/api/v1/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password }),
      });
      return { token: (await res.json()).token, accountId: account.id };
    },
    async upload(token, path, zip, fields = {}, headers = {}) {
      const form = new FormData();
      for (const [k, v] of Object.entries(fields)) form.append(k, v);
      if (zip) form.append('file', new Blob([new Uint8Array(zip)], { type: 'application/zip' }), 'site.zip');
      return fetch(`${api}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, ...headers },
        body: form,
        signal: AbortSignal.timeout(REQUEST_MS),
      });
    },
    async get(token, path) {
      const signal = AbortSignal.timeout(REQUEST_MS);
      return json(await fetch(`${api}${path}`, { headers: { authorization: `Bearer ${token}` }, signal }));
    },
    async post(token, path) {
      const signal = AbortSignal.timeout(REQUEST_MS);
      return json(
        await fetch(`${api}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, signal }),
      );
    },
    async call(token, method, path, body) {
      const res = await fetch(`${api}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_MS),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
    async waitFor(
      token,
      operationId,
      until = (op) => ['succeeded', 'failed', 'canceled'].includes(op.status),
      ms = 60_000,
    ) {
      // Monotonic: a wall clock stepped forward (seen on CI machines) must not end the wait early.
      const end = performance.now() + ms;
      for (;;) {
        const { body } = await self.get(token, `/api/v1/operations/${operationId}`);
        if (until(body)) return body;
        if (performance.now() > end) throw new Error(`operation did not get there in time: ${JSON.stringify(body)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    site(host, path = '/', headers = {}) {
      const url = new URL(edge);
      return new Promise((resolve, reject) => {
        const req = http.get({ host: url.hostname, port: url.port, path, headers: { host, ...headers } }, (res) => {
          const chunks: Buffer[] = [];
          res
            .on('data', (c) => chunks.push(c))
            .on('end', () =>
              resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString() }),
            );
        });
        req.setTimeout(REQUEST_MS, () => req.destroy(new Error(`GET ${host}${path}: no answer in ${REQUEST_MS} ms`)));
        req.on('error', reject);
      });
    },
    close: () => running.close(),
  };
  return self;
}

/** The Host header of a project URL. */
export const hostOf = (url: string) => new URL(url).host;
