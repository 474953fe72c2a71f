import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hostOf, liveHoist, type LiveHoist } from '../helpers/live.js';
import { accountWithPassword, remoteCli, type RemoteCli } from '../helpers/remote-cli.js';

let h: LiveHoist;
let cli: RemoteCli;
let appUrl: string;
// One live Hoist for every case: a Node.js app and a static site, deployed with the CLI.
test.before(async () => {
  h = await liveHoist({ healthTimeoutSeconds: 10 });
  cli = remoteCli(h);
  const user = await accountWithPassword(h);
  const login = await cli.run(['login'], `${user.email}\n${user.password}\n`);
  assert.is(login.code, 0, login.stderr);
  const pkg = JSON.stringify({ name: 'log-app', version: '1.0.0', scripts: { start: 'node server.js' } });
  appUrl = await deploy(folder('log-app', { 'package.json': pkg, 'server.js': server }));
  await deploy(folder('log-site', { 'index.html': '<h1>static</h1>' }));
});
test.after(async () => h?.close());

/** A folder `name` holding `files` (path → content). */
function folder(name: string, files: Record<string, string>): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'hoist-cli-logs-')), name);
  mkdirSync(dir, { recursive: true });
  for (const [file, body] of Object.entries(files)) writeFileSync(join(dir, file), body);
  return dir;
}

/** Deploys `dir` with the CLI; returns the live URL. */
async function deploy(dir: string): Promise<string> {
  const r = await cli.run(['deploy', dir]);
  assert.is(r.code, 0, r.stderr);
  return r.stdout.trim().split('\n').at(-1)!;
}

// A dependency-free app that says when it listens and logs each request's URL.
const server = `
const http = require('http');
http
  .createServer((req, res) => {
    console.log('request', req.url);
    res.end('ok');
  })
  .listen(Number(process.env.PORT), '127.0.0.1', () => console.log('ready on', process.env.PORT));
`;

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const lines = (s: string) => s.split('\n').filter(Boolean);

test("hoist logs: the live release's output, each line with when it was printed", async () => {
  const r = await cli.run(['logs', '--project', 'log-app']);
  assert.is(r.code, 0, r.stderr);
  const ready = lines(r.stdout).find((l) => / ready on \d+$/.test(l));
  assert.ok(ready, r.stdout);
  assert.match(ready.split(' ')[0], ISO);
});

test("a request through the edge shows up in the app's log", async () => {
  assert.is((await h.site(hostOf(appUrl), '/hello-from-the-test?x=1')).status, 200);
  let out = '';
  for (let i = 0; i < 20 && !out.includes('request /hello-from-the-test?x=1'); i++) {
    if (i) await new Promise((r) => setTimeout(r, 250));
    const r = await cli.run(['logs', '--project', 'log-app']);
    assert.is(r.code, 0, r.stderr);
    out = r.stdout;
  }
  const line = lines(out).find((l) => l.endsWith(' request /hello-from-the-test?x=1'));
  assert.ok(line, out);
  assert.match(line.split(' ')[0], ISO);
});

test('-n 1 prints the last line only; --json prints the API answer', async () => {
  const one = await cli.run(['logs', '--project', 'log-app', '-n', '1']);
  assert.is(one.code, 0, one.stderr);
  assert.is(lines(one.stdout).length, 1, one.stdout);
  assert.match(one.stdout, 'request /hello-from-the-test?x=1');

  const j = await cli.run(['logs', '--project', 'log-app', '--json']);
  assert.is(j.code, 0, j.stderr);
  const log = JSON.parse(j.stdout);
  assert.is(log.kept, true);
  assert.match(log.deployment_id, /^[0-9a-f-]{36}$/);
  assert.ok(
    log.lines.some((l: any) => /^ready on \d+$/.test(l.text) && ISO.test(l.at)),
    j.stdout,
  );
  const { releases } = JSON.parse((await cli.run(['releases', '--project', 'log-app', '--json'])).stdout);
  assert.is(log.deployment_id, releases.find((x: any) => x.live).id, 'the live release by default');
  const byId = await cli.run(['logs', log.deployment_id, '--project', 'log-app', '--lines', '1', '--json']);
  assert.is(byId.code, 0, byId.stderr);
  assert.is(JSON.parse(byId.stdout).lines.length, 1);
});

test('a static site: nothing is kept, said on stderr, exit 0', async () => {
  const r = await cli.run(['logs', '--project', 'log-site']);
  assert.is(r.code, 0, r.stderr);
  assert.is(r.stdout, '');
  assert.match(r.stderr, /No runtime log is kept for deployment [0-9a-f-]{36}: a static site runs no app/);
  const j = await cli.run(['logs', '--project', 'log-site', '--json']);
  assert.is(j.code, 0, j.stderr);
  const log = JSON.parse(j.stdout);
  assert.equal([log.kept, log.lines], [false, []]);
});

test('a bad --lines is bad usage (exit 2) naming the option; nothing is asked of the API', async () => {
  // No saved login: had the API been called, the exit would be 1 (not logged in).
  const loggedOut = { XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), 'hoist-cli-config-')) };
  for (const n of ['0', '1001', 'ten', '2.5', '-3']) {
    const r = await cli.run(['logs', '--project', 'log-app', '--lines', n], undefined, loggedOut);
    assert.is(r.code, 2, `${n}: ${r.stderr}`);
    assert.match(r.stderr, '--lines', r.stderr);
  }
});

test("an unknown deployment: the API's 404 message, exit 1", async () => {
  const r = await cli.run(['logs', '00000000-0000-4000-8000-000000000000', '--project', 'log-app']);
  assert.is(r.code, 1, r.stderr);
  assert.match(r.stderr, /^hoist: .*not found.*\(not_found/im);
  const j = await cli.run(['logs', '00000000-0000-4000-8000-000000000000', '--project', 'log-app', '--json']);
  assert.is(j.code, 1);
  assert.is(JSON.parse(j.stdout).error.code, 'not_found');
});

test('a project with no live release: said so, exit 1', async () => {
  const res = await fetch(`${h.api}/api/v1/projects/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token()}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'never-deployed' }),
  });
  assert.is(res.status, 201);
  const r = await cli.run(['logs', '--project', 'never-deployed']);
  assert.is(r.code, 1);
  assert.match(r.stderr, 'never-deployed has no live release');
});

/** The token the CLI saved at login. */
const token = (): string => JSON.parse(readFileSync(join(cli.configHome, 'hoist', 'credentials.json'), 'utf8')).token;

test('hoist logs --follow prints the lines the app prints from then on, each once', async () => {
  assert.is((await cli.run(['logs', '--project', 'log-app', '--follow', '--json'])).code, 2, 'not with --json');
  const child = cli.spawn(['logs', '--project', 'log-app', '--follow', '-n', '1']);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d));
  const seen = async (text: string) => {
    for (let i = 0; i < 60 && !out.includes(text); i++) await new Promise((r) => setTimeout(r, 100));
    return out.includes(text);
  };
  try {
    await new Promise((r) => setTimeout(r, 300));
    for (const path of ['/followed-1', '/followed-2']) {
      await h.site(hostOf(appUrl), path);
      assert.ok(await seen(`request ${path}`), out);
    }
    await new Promise((r) => setTimeout(r, 2500));
    const printed = lines(out).filter((l) => / request \/followed-/.test(l));
    assert.equal(
      printed.map((l) => l.slice(l.indexOf(' ') + 1)),
      ['request /followed-1', 'request /followed-2'],
      'each once, in order',
    );
    for (const l of printed) assert.match(l.split(' ')[0], ISO);
  } finally {
    child.kill('SIGINT');
  }
});

test("hoist deploy --clear-cache: the build starts without the account's build cache, and says so", async () => {
  const pkg = JSON.stringify({ name: 'cache-app', version: '1.0.0', scripts: { start: 'node server.js' } });
  const r = await cli.run([
    'deploy',
    folder('cache-app', { 'package.json': pkg, 'server.js': server }),
    '--clear-cache',
  ]);
  assert.is(r.code, 0, r.stderr);
  // The build log goes to stderr (stdout is the URL).
  assert.match(r.stderr, 'Build cache: cleared (clear_cache): this build starts without one.');
  assert.not.match(r.stderr, 'Build cache: restored');
});

test.run();
