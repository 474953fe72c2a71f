// The real `hoist deploy-hooks` commands against a live Hoist: add prints the URL alone on stdout, once; ls never
// shows it; a POST to it (no token) builds and deploys the live version again, which ls then tells; rm revokes it.
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { liveHoist, type LiveHoist } from '../helpers/live.js';
import { accountWithPassword, remoteCli, type RemoteCli } from '../helpers/remote-cli.js';

let h: LiveHoist;
let cli: RemoteCli;
let user: { email: string; password: string };
const project = ['--project', 'hooked-site'];
const URL_OF_HOOK = /\/api\/v1\/deploy-hooks\/dh_[A-Za-z0-9_-]{43}$/;
let hookId: string;
let url: string;

// A live Hoist, a user logged in with the CLI, and a static site deployed with it.
test.before(async () => {
  h = await liveHoist({ healthTimeoutSeconds: 10 });
  cli = remoteCli(h);
  user = await accountWithPassword(h);
  const login = await cli.run(['login'], `${user.email}\n${user.password}\n`);
  assert.is(login.code, 0, login.stderr);
  const dir = join(mkdtempSync(join(tmpdir(), 'hoist-cli-deploy-hooks-')), 'hooked-site');
  mkdirSync(dir);
  writeFileSync(join(dir, 'index.html'), '<h1>hooked</h1>');
  const deploy = await cli.run(['deploy', dir]);
  assert.is(deploy.code, 0, deploy.stderr);
});
test.after(async () => h?.close());

const lsJson = async () => {
  const r = await cli.run(['deploy-hooks', 'ls', ...project, '--json']);
  assert.is(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as { id: string; name: string; created_at: string; last_triggered_at: string | null }[];
};

/** POSTs to a hook URL as a CMS does: no Authorization header. */
async function fire(hookUrl: string) {
  const res = await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  return { status: res.status, body: await res.json() };
}

test('bad usage exits 2 before any request: an empty name, a hook id not a UUID', async () => {
  // An API that cannot be reached: a request would fail with exit 1, not 2.
  const away = { HOIST_TOKEN: 'x', HOIST_API_URL: 'http://127.0.0.1:9' };
  for (const args of [
    ['add', ''],
    ['add', '   '],
    ['rm', 'not-an-id'],
    ['rm', `${randomUUID()}x`],
  ]) {
    const r = await cli.run(['deploy-hooks', ...args, ...project], undefined, away);
    assert.is(r.code, 2, `${JSON.stringify(args)}: ${r.stderr}`);
    assert.is(r.stdout, '');
  }
  const empty = await cli.run(['deploy-hooks', 'add', ' ', ...project]);
  assert.is(empty.code, 2, empty.stderr);
  assert.match(empty.stderr, 'a deploy hook needs a name');
  const bad = await cli.run(['deploy-hooks', 'rm', 'not-an-id', ...project]);
  assert.is(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, '"not-an-id" is not a deploy hook id (a UUID: hoist deploy-hooks ls lists them)');
  const json = await cli.run(['deploy-hooks', 'add', '', ...project, '--json']);
  assert.is(json.code, 2);
  assert.is(JSON.parse(json.stdout).error.code, 'bad_usage');
  assert.equal(await lsJson(), [], 'nothing was created');
});

test('add prints the URL alone on stdout, once; --json prints the whole hook', async () => {
  const r = await cli.run(['deploy-hooks', 'add', 'cms-publish', ...project]);
  assert.is(r.code, 0, r.stderr);
  url = r.stdout.trim();
  assert.match(url, URL_OF_HOOK);
  assert.ok(url.startsWith(`${h.api}/`), url);
  assert.is(r.stdout, `${url}\n`);
  assert.match(r.stderr, /^Added deploy hook [0-9a-f-]{36} \(cms-publish\) on hooked-site\./);
  assert.match(r.stderr, 'keep it secret, it is not shown again');
  assert.match(r.stderr, 'a POST to it builds and deploys the live version');
  hookId = /Added deploy hook ([0-9a-f-]{36})/.exec(r.stderr)![1];

  const j = await cli.run(['deploy-hooks', 'add', 'Nightly rebuild', ...project, '--json']);
  assert.is(j.code, 0, j.stderr);
  assert.is(j.stderr, '');
  const other = JSON.parse(j.stdout);
  assert.equal(Object.keys(other).sort(), ['created_at', 'created_by', 'id', 'last_triggered_at', 'name', 'url']);
  assert.equal([other.name, other.last_triggered_at], ['Nightly rebuild', null]);
  assert.match(other.url, URL_OF_HOOK);
  assert.is.not(other.url, url);
  const rm = await cli.run(['deploy-hooks', 'rm', other.id, ...project]);
  assert.is(rm.code, 0, rm.stderr);
});

test('ls lists the hook, never used yet, and never a URL', async () => {
  const r = await cli.run(['deploy-hooks', 'ls', ...project]);
  assert.is(r.code, 0, r.stderr);
  const [head, row, ...rest] = r.stdout.trim().split('\n');
  assert.equal(head.split(/\s+/), ['ID', 'NAME', 'CREATED', 'BY', 'LAST', 'USED']);
  const cells = row.split(/\s+/);
  assert.equal([cells[0], cells[1], cells[3], cells[4]], [hookId, 'cms-publish', user.email, 'never']);
  assert.match(cells[2], /^\d{4}-\d\d-\d\dT/);
  assert.is(cells.length, 5);
  assert.equal(rest, []);
  const json = await cli.run(['deploy-hooks', 'ls', ...project, '--json']);
  assert.is(json.code, 0, json.stderr);
  for (const out of [r.stdout + r.stderr, json.stdout + json.stderr]) {
    assert.not.match(out, 'dh_');
    assert.not.match(out, url.split('/dh_')[1]);
    assert.not.match(out, '/api/v1/deploy-hooks/');
  }
  assert.equal(
    JSON.parse(json.stdout).map((x: any) => [x.id, x.name, x.last_triggered_at, x.url]),
    [[hookId, 'cms-publish', null, undefined]],
  );
});

test('a POST to the URL, with no token, builds and deploys the live version; ls shows when it was used', async () => {
  const fired = await fire(url);
  assert.is(fired.status, 202, JSON.stringify(fired.body));
  assert.is(fired.body.action, 'deploy_hook_queued');
  assert.is(fired.body.project.name, 'hooked-site');
  const id: string = fired.body.operation.id;

  const end = performance.now() + 60_000;
  let op: any = {};
  while (!['succeeded', 'failed', 'canceled'].includes(op.status)) {
    if (performance.now() > end) throw new Error(`the hook's operation did not end: ${JSON.stringify(op)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
    const show = await cli.run(['operations', 'show', id, '--json']);
    assert.is(show.code, 0, show.stderr);
    op = JSON.parse(show.stdout);
  }
  assert.is(op.status, 'succeeded', JSON.stringify(op));

  const [hook] = await lsJson();
  assert.ok(hook.last_triggered_at, 'last_triggered_at is set');
  const r = await cli.run(['deploy-hooks', 'ls', ...project]);
  assert.is(r.code, 0, r.stderr);
  const cells = r.stdout.trim().split('\n')[1].split(/\s+/);
  assert.equal([cells[0], cells[4]], [hookId, hook.last_triggered_at]);
  assert.match(cells[4], /^\d{4}-\d\d-\d\dT/);
});

test('API errors are shown with exit 1: an unknown hook, a name too long, an unknown project', async () => {
  const missing = randomUUID();
  const r = await cli.run(['deploy-hooks', 'rm', missing, ...project]);
  assert.is(r.code, 1, r.stderr);
  assert.match(r.stderr, /^hoist: .*\(not_found, request [^)]+\)$/m);
  assert.is(r.stdout, '');
  const json = await cli.run(['deploy-hooks', 'rm', missing, ...project, '--json']);
  assert.is(json.code, 1);
  assert.is(JSON.parse(json.stdout).error.code, 'not_found');
  const long = await cli.run(['deploy-hooks', 'add', 'x'.repeat(101), ...project]);
  assert.is(long.code, 1, long.stderr);
  assert.match(long.stderr, /\(invalid_request, request [^)]+\)$/m);
  assert.is(long.stdout, '');
  const noProject = await cli.run(['deploy-hooks', 'ls', '--project', 'nope']);
  assert.is(noProject.code, 1);
  assert.match(noProject.stderr, 'No project "nope"');
  assert.equal(
    (await lsJson()).map((x) => x.id),
    [hookId],
  );
});

test('rm revokes the hook: its URL answers 404 and ls says there are none', async () => {
  const r = await cli.run(['deploy-hooks', 'rm', hookId, ...project]);
  assert.is(r.code, 0, r.stderr);
  assert.is(r.stdout, `Removed deploy hook ${hookId} from hooked-site; its URL no longer works.\n`);
  const fired = await fire(url);
  assert.is(fired.status, 404, JSON.stringify(fired.body));
  assert.is(fired.body.error.code, 'not_found');
  const ls = await cli.run(['deploy-hooks', 'ls', ...project]);
  assert.is(ls.stdout, 'no deploy hooks on hooked-site\n');
  assert.equal(await lsJson(), []);
  const json = await cli.run(['deploy-hooks', 'rm', hookId, ...project, '--json']);
  assert.is(json.code, 1, 'a second rm finds nothing');
  assert.is(JSON.parse(json.stdout).error.code, 'not_found');
});

test.run();
