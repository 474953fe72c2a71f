// legs: db
// SIGKILL of `hoist start` in the middle of a build, then a restart: the live release serves
// throughout, the interrupted build is delivered again and the operation ends succeeded, and no
// half-written object is left in Storage.
import { RequestContext } from '@mikro-orm/core';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ACCOUNT_SERVICE, type AccountService } from '../../core/accounts/account-service.js';
import { testCli, type TestCli } from '../helpers/cli.js';
import { freePort, startHoist, until } from '../helpers/hoist-process.js';
import { GATE_FILE, processesRunning, workspaceGate } from '../helpers/gated-build.js';
import { zipOf } from '../helpers/live.js';

let cli: TestCli;
let server: ChildProcess | undefined;
/** Ends the build's command line: unique to this run, to find its processes on the host. */
const tag = `restart-${randomUUID()}`;

test.before(async () => {
  cli = await testCli();
});
test.after(async () => {
  server?.kill('SIGKILL');
  for (const version of ['v1', 'v2']) {
    for (const pid of processesRunning(`node build.js ${version} ${tag}`)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
  await cli?.close();
});

test('a SIGKILL during a build resumes after restart; the live release keeps serving', async () => {
  const [apiPort, edgePort] = [await freePort(), await freePort()];
  Object.assign(cli.env, {
    HOIST_PORT: String(apiPort),
    HOIST_EDGE_PORT: String(edgePort),
    HOIST_QUEUE_VISIBILITY_SECONDS: '2',
    HOIST_STUCK_AFTER_SECONDS: '2',
  });
  const api = `http://127.0.0.1:${apiPort}`;
  const email = 'restart@example.com';
  await RequestContext.create(cli.kernel.orm.em.fork(), () =>
    cli.kernel.get<AccountService>(ACCOUNT_SERVICE).create({ email, password: 'a-long-password', plan: 'pro' }),
  );
  server = await startHoist(cli);
  const { token } = await (
    await fetch(`${api}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'a-long-password' }),
    })
  ).json();
  const auth = { authorization: `Bearer ${token}` };
  const op = async (id: string) => (await fetch(`${api}/api/v1/operations/${id}`, { headers: auth })).json();
  const site = () =>
    new Promise<string | null>((resolve) => {
      http
        .get(
          { host: '127.0.0.1', port: edgePort, path: '/', headers: { host: `restart-site.localhost:${edgePort}` } },
          (res) => {
            let body = '';
            res.on('data', (d) => (body += d)).on('end', () => resolve(body));
          },
        )
        .on('error', () => resolve(null));
    });

  // The build waits for the gate's file in its own workspace: the sandbox shows it no other host path.
  const gate = workspaceGate(cli.dataDir, 'build.js');
  const buildJs = `// ${gate.id}
const fs=require('fs');
const done=()=>{fs.mkdirSync('dist',{recursive:true});fs.writeFileSync('dist/index.html',process.argv[2]);};
const gated=()=>fs.existsSync(${JSON.stringify(GATE_FILE)});
if(process.argv[2]==='v1'||gated())done();else{const t=setInterval(()=>{if(gated()){clearInterval(t);done();}},50);}`;
  const created = await fetch(`${api}/api/v1/projects/`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'restart-site', settings: { output_directory: 'dist' } }),
  });
  const project = await created.json();
  const deploy = async (version: string) => {
    await fetch(`${api}/api/v1/projects/${project.id}/`, {
      method: 'PATCH',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ settings: { build_command: `node build.js ${version} ${tag}` } }),
    });
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(await zipOf({ 'build.js': buildJs }))]), 'site.zip');
    const res = await fetch(`${api}/api/v1/projects/${project.id}/local-to-live`, {
      method: 'POST',
      headers: auth,
      body: form,
    });
    return (await res.json()).operation.id as string;
  };

  const first = await deploy('v1');
  await until(async () => (await op(first)).status === 'succeeded');
  assert.is(await site(), 'v1');

  const second = await deploy('v2');
  await until(() => processesRunning(`node build.js v2 ${tag}`).length > 0);
  server.kill('SIGKILL');
  await new Promise((r) => server!.once('exit', r));

  server = await startHoist(cli);
  assert.is(await site(), 'v1', 'the live release serves right after the restart');
  const during = await op(second);
  assert.is(during.status, 'running');
  gate.open();
  await until(async () => ['succeeded', 'failed', 'canceled'].includes((await op(second)).status));
  gate.close();
  const after = await op(second);
  assert.is(after.status, 'succeeded', JSON.stringify(after));
  assert.is(after.attempt, 1);
  assert.is(await site(), 'v2');
  const tmp = join(cli.dataDir, 'storage', '.tmp');
  assert.equal(existsSync(tmp) ? readdirSync(tmp) : [], [], 'no half-written object is left');
});

test.run();
