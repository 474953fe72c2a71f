// legs: db
// The README's first steps over a real socket: `hoist start`, create an account with the CLI, log in,
// read /api/v1/me, then SIGTERM and a clean exit.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { testCli, type TestCli } from '../../helpers/cli.js';

let cli: TestCli;
let server: ChildProcess | undefined;
let output = '';
test.before(async () => {
  cli = await testCli();
});
test.after(async () => {
  if (server?.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
  await cli?.close();
});

/** Resolves with the API URL `hoist start` prints, or rejects when it exits or stays silent for a minute. */
function listening(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`hoist start printed no URL within 60 s:\n${output}`)), 60_000);
    const onData = (d: Buffer) => {
      output += d;
      const m = /^hoist api listening on (\S+)$/m.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d) => (output += d));
    child.on('exit', (code) => reject(new Error(`hoist start exited with ${code}:\n${output}`)));
  });
}

test('hoist start serves the API; a CLI-made account logs in and reads /me; SIGTERM exits 0', async () => {
  Object.assign(cli.env, { HOIST_PORT: '0', HOIST_EDGE_PORT: '0' });
  server = cli.spawn(['start']);
  const url = await listening(server);
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);

  const created = await cli.run(['accounts', 'create', '--email', 'smoke@example.com', '--json'], 'a-long-password');
  assert.is(created.code, 0, created.stderr);
  const { user, account } = JSON.parse(created.stdout);

  const login = await fetch(`${url}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'smoke@example.com', password: 'a-long-password' }),
  });
  assert.is(login.status, 200);
  const { token } = (await login.json()) as { token: string };

  const me = await fetch(`${url}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } });
  assert.is(me.status, 200);
  const body = (await me.json()) as { user: { id: string; email: string }; account: { id: string; plan: string } };
  assert.is(body.user.id, user.id);
  assert.is(body.user.email, 'smoke@example.com');
  assert.is(body.account.id, account.id);
  assert.is(body.account.plan, 'free');

  const [openapi, docs] = await Promise.all([fetch(`${url}/api/v1/openapi.json`), fetch(`${url}/docs`)]);
  assert.is(openapi.status, 200);
  assert.is(((await openapi.json()) as { openapi: string }).openapi, '3.1.0');
  assert.is(docs.status, 200);
  await docs.arrayBuffer();

  const exited = once(server, 'exit');
  server.kill('SIGTERM');
  const [code, signal] = await exited;
  assert.is(signal, null, output);
  assert.is(code, 0, output);
});

test.run();
