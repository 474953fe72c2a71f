// legs: db
// A secret set through Local-to-Live reaches the build and the running release of a Node.js app,
// and nothing else: not an API answer, a log line, the build log, a database row or a file on disk.
// A ciphertext moved to another project or name does not decrypt; `hoist keys rotate` keeps values
// readable; a restart brings the live release back with the environment it was deployed with.
import { RequestContext } from '@mikro-orm/core';
import type { ChildProcess } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ACCOUNT_SERVICE, type AccountService } from '../../core/accounts/account-service.js';
import { EnvironmentVariable } from '../../core/entities/environment-variable.js';
import { ProjectKey } from '../../core/entities/project-key.js';
import { ENVIRONMENT_SERVICE, type EnvironmentService } from '../../core/environment/environment-service.js';
import { testCli, type TestCli } from '../helpers/cli.js';
import { freePort } from '../helpers/hoist-process.js';
import { hostOf, zipOf } from '../helpers/live.js';

const SECRET = `sk_live_${randomUUID().replace(/-/g, '')}`;
const BUILD_ONLY = `build-${randomUUID()}`;
const RUNTIME_ONLY = `runtime-${randomUUID()}`;
const NEWER = `sk_newer_${randomUUID().replace(/-/g, '')}`;
const secrets = [SECRET, BUILD_ONLY, RUNTIME_ONLY, NEWER];
const sha = (v: string) => createHash('sha256').update(v).digest('hex');

let cli: TestCli;
let server: ChildProcess | undefined;
let logs = '';
const answers: string[] = [];

const until = async <T>(get: () => Promise<T>, ok: (v: T) => boolean, ms = 120_000): Promise<T> => {
  const end = Date.now() + ms;
  for (;;) {
    const v = await get();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out; last: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

function start(): Promise<ChildProcess> {
  const child = cli.spawn(['start']);
  let out = '';
  return new Promise((resolve, reject) => {
    const take = (d: Buffer) => {
      out += d;
      logs += d;
      if (/hoist worker running/.test(out)) resolve(child);
    };
    child.stdout!.on('data', take);
    child.stderr!.on('data', take);
    child.on('exit', (code) => reject(new Error(`hoist start exited with ${code}: ${out}`)));
  });
}

test.before(async () => {
  cli = await testCli();
});
test.after(async () => {
  server?.kill('SIGKILL');
  await cli?.close();
});

// The build records the SHA-256 of what it saw; the server answers with the build's record and its own.
const app = {
  'package.json': JSON.stringify({
    name: 'env-app',
    version: '1.0.0',
    scripts: { build: 'node build.js', start: 'node server.js' },
  }),
  'build.js': `const fs = require('fs'), c = require('crypto');
const h = (v) => (v === undefined ? null : c.createHash('sha256').update(v).digest('hex'));
const seen = {
  SECRET: h(process.env.SECRET),
  BUILD_ONLY: h(process.env.BUILD_ONLY),
  RUNTIME_ONLY: h(process.env.RUNTIME_ONLY),
};
fs.writeFileSync('build-saw.json', JSON.stringify(seen));
console.log('build ran with ' + Object.keys(process.env).filter((k) => /ONLY|SECRET/.test(k)).sort().join(','));`,
  'server.js': `const fs = require('fs'), c = require('crypto');
const h = (v) => (v === undefined ? null : c.createHash('sha256').update(v).digest('hex'));
const runtime = () => ({
  SECRET: h(process.env.SECRET),
  BUILD_ONLY: h(process.env.BUILD_ONLY),
  RUNTIME_ONLY: h(process.env.RUNTIME_ONLY),
});
require('http')
  .createServer((q, r) =>
    r.end(JSON.stringify({ build: JSON.parse(fs.readFileSync('build-saw.json', 'utf8')), runtime: runtime() })),
  )
  .listen(process.env.PORT, '127.0.0.1');`,
};

test(
  'a secret reaches the build and the release only; moved ciphertexts fail; ' + 'rotation and restart keep values',
  async () => {
    const [apiPort, edgePort] = [await freePort(), await freePort()];
    Object.assign(cli.env, {
      HOIST_PORT: String(apiPort),
      HOIST_EDGE_PORT: String(edgePort),
      HOIST_LOG_LEVEL: 'debug',
      HOIST_HEALTH_TIMEOUT_SECONDS: '30',
    });
    const api = `http://127.0.0.1:${apiPort}/api/v1`;
    const email = 'env@example.com';
    await RequestContext.create(cli.kernel.orm.em.fork(), () =>
      cli.kernel.get<AccountService>(ACCOUNT_SERVICE).create({ email, password: 'a-long-password', plan: 'pro' }),
    );
    server = await start();

    const call = async (method: string, path: string, body?: unknown, form?: FormData) => {
      const res = await fetch(`${api}${path}`, {
        method,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: form ?? (body === undefined ? undefined : JSON.stringify(body)),
      });
      const text = await res.text();
      answers.push(text);
      return { status: res.status, text, json: () => JSON.parse(text) };
    };
    let token = '';
    token = (await call('POST', '/auth/login', { email, password: 'a-long-password' })).json().token;
    const upload = async (path: string, fields: Record<string, string>) => {
      const form = new FormData();
      for (const [k, v] of Object.entries(fields)) form.append(k, v);
      form.append('file', new Blob([new Uint8Array(await zipOf(app))]), 'app.zip');
      const res = await call('POST', path, undefined, form);
      assert.is(res.status, 202, res.text);
      return res.json();
    };
    const finished = (id: string) =>
      until(
        async () => (await call('GET', `/operations/${id}`)).json(),
        (op) => ['succeeded', 'failed', 'canceled'].includes(op.status),
      );
    const site = (host: string) =>
      new Promise<string | null>((resolve) => {
        http
          .get({ host: '127.0.0.1', port: edgePort, path: '/', headers: { host } }, (res) => {
            let body = '';
            res.on('data', (d) => (body += d)).on('end', () => resolve(res.statusCode === 200 ? body : null));
          })
          .on('error', () => resolve(null));
      });

    // 1. Local-to-Live creates the project with its variables; build and release see what their scope allows.
    const environment = {
      SECRET,
      BUILD_ONLY: { value: BUILD_ONLY, scope: 'build' },
      RUNTIME_ONLY: { value: RUNTIME_ONLY, scope: 'runtime' },
    };
    const first = await upload('/local-to-live', { name: 'env-app', environment: JSON.stringify(environment) });
    const projectId = first.project.id as string;
    const host = hostOf(first.project.url);
    const op = await finished(first.operation.id);
    assert.is(op.status, 'succeeded', JSON.stringify(op));
    const expected = {
      build: { SECRET: sha(SECRET), BUILD_ONLY: sha(BUILD_ONLY), RUNTIME_ONLY: null },
      runtime: { SECRET: sha(SECRET), BUILD_ONLY: null, RUNTIME_ONLY: sha(RUNTIME_ONLY) },
    };
    assert.equal(
      JSON.parse(
        (await until(
          () => site(host),
          (b) => b !== null,
        ))!,
      ),
      expected,
    );

    const builds = (await call('GET', `/projects/${projectId}/builds`)).json().builds;
    const buildLog = (await call('GET', `/projects/${projectId}/builds/${builds[0].id}/log`)).text;
    assert.match(buildLog, /build ran with BUILD_ONLY,SECRET/);
    await call('GET', `/projects/${projectId}/environment`);
    await call('GET', `/projects/${projectId}/deployments`);
    await call('GET', `/projects/${projectId}/releases`);

    // 2. A ciphertext copied to another project does not decrypt: its deployment fails, naming the variable.
    const other = (await call('POST', '/projects/', { name: 'env-other' })).json().id as string;
    assert.is((await call('PUT', `/projects/${other}/environment/SECRET`, { value: 'other-value' })).status, 201);
    const em = () => cli.kernel.orm.em.fork();
    const original = await em().findOneOrFail(EnvironmentVariable, { projectId, name: 'SECRET' });
    await em().nativeUpdate(
      EnvironmentVariable,
      { projectId: other, name: 'SECRET' },
      { ciphertext: original.ciphertext },
    );
    const moved = await finished((await upload(`/projects/${other}/local-to-live`, {})).operation.id);
    assert.is(moved.status, 'failed');
    const failure = JSON.stringify(moved);
    assert.match(failure, /environment_undecryptable/);
    assert.match(failure, /Environment variable SECRET does not decrypt/);

    // ... and so does one renamed within its project.
    await call('PUT', `/projects/${other}/environment/SECRET`, { value: 'other-value' });
    await em().nativeUpdate(EnvironmentVariable, { projectId: other, name: 'SECRET' }, { name: 'RENAMED' });
    const renamed = await cli.kernel
      .get<EnvironmentService>(ENVIRONMENT_SERVICE)
      .forRuntime(randomUUID(), other, 'production')
      .then(
        () => null,
        (e: Error & { code?: string }) => e,
      );
    assert.is(renamed?.code, 'environment_undecryptable');
    assert.match(renamed!.message, /Environment variable RENAMED does not decrypt/);

    // 3. Rotation: a new current master key wraps every project key; values still decrypt for a new deployment.
    const keysCli = async (args: string[]) => {
      cli.env.HOIST_LOG_LEVEL = 'warn';
      const r = await cli.run(['keys', ...args]);
      cli.env.HOIST_LOG_LEVEL = 'debug';
      logs += r.stdout + r.stderr;
      return r;
    };
    const before = JSON.parse((await keysCli(['list', '--json'])).stdout);
    assert.is(before.length, 1);
    const rotated = await keysCli(['rotate']);
    assert.is(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /Re-wrapped 2 project key\(s\)/);
    const after = JSON.parse((await keysCli(['list', '--json'])).stdout);
    assert.is(after.length, 2);
    const current = after.find((k: { current: boolean }) => k.current);
    assert.is.not(current.id, before[0].id);
    assert.equal(
      after.map((k: any) => Object.keys(k).sort()),
      [
        ['created_at', 'current', 'id', 'project_keys'],
        ['created_at', 'current', 'id', 'project_keys'],
      ],
    );
    assert.equal(
      (await em().find(ProjectKey, {})).map((k) => k.keyId),
      [current.id, current.id],
    );
    const material = JSON.parse(readFileSync(join(cli.dataDir, 'master-keys.json'), 'utf8')).keys.map(
      (k: { key: string }) => k.key,
    );
    assert.is(material.length, 2);
    for (const m of material)
      assert.not.ok(logs.includes(m) || JSON.stringify(after).includes(m), 'no key material is printed');
    const redeploy = await finished((await upload(`/projects/${projectId}/local-to-live`, {})).operation.id);
    assert.is(redeploy.status, 'succeeded', JSON.stringify(redeploy));
    assert.equal(
      JSON.parse(
        (await until(
          () => site(host),
          (b) => b !== null,
        ))!,
      ),
      expected,
    );

    // 4. A change waits for the next deployment: after a restart the live release runs with what it was deployed with.
    assert.is((await call('PUT', `/projects/${projectId}/environment/SECRET`, { value: NEWER })).status, 200);
    server.kill('SIGTERM');
    await new Promise((r) => server!.once('exit', r));
    server = await start();
    assert.equal(
      JSON.parse(
        (await until(
          () => site(host),
          (b) => b !== null,
        ))!,
      ),
      expected,
      'restored with its own environment',
    );

    // 5. The secrets are nowhere but in builds and releases.
    assert.ok(answers.length > 15);
    for (const s of secrets) {
      for (const a of answers) assert.not.ok(a.includes(s), `an API answer holds a secret: ${a.slice(0, 300)}`);
      assert.not.ok(logs.includes(s), 'the process log holds a secret');
      assert.not.ok(buildLog.includes(s), 'the build log holds a secret');
    }
    assert.ok(logs.length > 1000 && /"level":20/.test(logs), 'debug logs were captured');
    const listed = await em()
      .getConnection()
      .execute(
        cli.env.HOIST_DB === 'postgres'
          ? `select tablename as name from pg_tables where schemaname = 'public'`
          : `select name from sqlite_master where type = 'table'`,
      );
    const tables = (listed as { name: string }[]).map((r) => r.name);
    for (const t of [
      'jobs',
      'operations',
      'builds',
      'deployments',
      'versions',
      'environment_variables',
      'environment_snapshots',
    ])
      assert.ok(tables.includes(t), t);
    for (const t of tables) {
      const rows = JSON.stringify(await em().getConnection().execute(`select * from "${t}"`));
      for (const s of secrets) assert.not.ok(rows.includes(s), `table ${t} holds a secret`);
    }
    // Every file Hoist keeps (database, storage, build logs, keys, releases) but what the app itself writes.
    // Sockets (the sandbox's API sockets of running releases) hold no bytes and cannot be read.
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((n) => {
        const s = statSync(join(dir, n));
        return s.isDirectory() ? files(join(dir, n)) : s.isFile() ? [join(dir, n)] : [];
      });
    const all = files(cli.dataDir);
    assert.ok(all.some((f) => f.endsWith('build-saw.json')));
    for (const f of all) {
      const bytes = readFileSync(f);
      for (const s of secrets) assert.is(bytes.indexOf(s), -1, `${f} holds a secret`);
    }
  },
);

test.run();
