import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { listFolder, manifestOf } from '../../adapters/cli/remote/archive.js';
import { SESSION_REVOCATIONS } from '../../core/auth/session-revocations.js';
import { Session } from '../../core/entities/session.js';
import { Version } from '../../core/entities/version.js';
import { gatedProject } from '../helpers/gated-build.js';
import { hostOf, liveHoist, type LiveHoist } from '../helpers/live.js';
import { accountWithPassword, remoteCli, type RemoteCli } from '../helpers/remote-cli.js';

let h: LiveHoist;
let cli: RemoteCli;
let user: { email: string; password: string };
let token: string;
test.before(async () => {
  h = await liveHoist({ healthTimeoutSeconds: 10 });
  cli = remoteCli(h);
  user = await accountWithPassword(h);
});
test.after(async () => h?.close());

/** A folder holding `files` (path → content). */
function site(files: Record<string, string | Buffer>): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'hoist-cli-site-')), 'my-site');
  for (const [name, body] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), body);
  }
  return dir;
}

const credentials = () => JSON.parse(readFileSync(join(cli.configHome, 'hoist', 'credentials.json'), 'utf8'));
const em = () => h.running.kernel.orm.em.fork();
const lines = (s: string) => s.trim().split('\n');

test(
  'bad usage exits 2 before anything is sent: an unknown option, a missing folder, ' + '--name with --project',
  async () => {
    for (const args of [
      ['deploy', '--bogus'],
      ['deploy', '/no/such/folder'],
      ['deploy', '.', '--name', 'a', '--project', 'b'],
      ['env', 'set', 'not a name', 'x'],
      ['nonsense'],
    ]) {
      const r = await cli.run(args);
      assert.is(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    }
  },
);

test('not logged in: a command says so and what to run (exit 1), as JSON too', async () => {
  const r = await cli.run(['projects']);
  assert.is(r.code, 1);
  assert.match(r.stderr, `Not logged in to ${h.api}: run \`hoist login\``);
  const j = await cli.run(['whoami', '--json']);
  assert.is(j.code, 1);
  assert.is(JSON.parse(j.stdout).error.code, 'not_logged_in');
});

test('network unreachable: the error names the URL', async () => {
  const r = await cli.run(['whoami', '--api', 'http://127.0.0.1:9'], undefined, { HOIST_TOKEN: 'x' });
  assert.is(r.code, 1);
  assert.match(r.stderr, 'Cannot reach http://127.0.0.1:9');
  assert.match(r.stderr, /--api <url> or HOIST_API_URL/);
});

test(
  'login from stdin: the token is kept with the API URL in a file only the user can ' + 'read; whoami uses it',
  async () => {
    const bad = await cli.run(['login'], `${user.email}\nwrong password\n`);
    assert.is(bad.code, 1, bad.stderr);
    const r = await cli.run(['login'], `${user.email}\n${user.password}\n`);
    assert.is(r.code, 0, r.stderr);
    const file = join(cli.configHome, 'hoist', 'credentials.json');
    assert.is(statSync(file).mode & 0o777, 0o600);
    assert.is(statSync(dirname(file)).mode & 0o777, 0o700);
    const saved = credentials();
    assert.is(saved.api_url, h.api);
    assert.is(saved.email, user.email);
    assert.not.match(r.stdout + r.stderr, saved.token, 'the token is never printed');
    token = saved.token;
    // A wrong password while logged in is the API's answer, not a saved login that expired; the login stays.
    const wrong = await cli.run(['login'], `${user.email}\nwrong password\n`);
    assert.is(wrong.code, 1, wrong.stderr);
    assert.match(wrong.stderr, 'hoist: Invalid e-mail or password (unauthorized');
    assert.is(credentials().token, token);
    const who = await cli.run(['whoami', '--json']);
    assert.is(who.code, 0, who.stderr);
    assert.is(JSON.parse(who.stdout).user.email, user.email);
    const password = await cli.run(['login', '--email', user.email, '--password', 'x']);
    assert.is(password.code, 2, 'a password on the command line is refused');
  },
);

let url: string;
let projectId: string;

test(
  'deploy a folder: ignore rules and symlinks honoured, size and progress shown, ' + 'the URL printed answers',
  async () => {
    const dir = site({
      'index.html': '<h1>first</h1>',
      '.gitignore': '*.log\n',
      '.hoistignore': 'secret.txt\n',
      'secret.txt': 'do not upload',
      'debug.log': 'no',
      'node_modules/dep/index.js': 'no',
      '.git/HEAD': 'ref: refs/heads/main',
      'about.html': 'about',
    });
    symlinkSync('/etc/hostname', join(dir, 'host.txt'));
    const r = await cli.run(['deploy', dir]);
    assert.is(r.code, 0, r.stderr);
    url = lines(r.stdout).at(-1)!;
    assert.match(url, /^http:\/\/my-site\.localhost:\d+\/$/);
    assert.match(r.stderr, /Found 4 files in .* \(\d+ B\); 4 new, sending \d+ B/);
    assert.match(r.stderr, 'host.txt: skipped, a symlink to outside the folder');
    assert.match(r.stderr, /Uploading \d+ B/);
    assert.match(r.stderr, /analyze: succeeded[\s\S]*deploy: succeeded/);
    // The streamed log lines, each once: the operation's last_lines, which repeat them, are not shown again.
    const logged = lines(r.stderr).filter((l) => l.startsWith('  │ '));
    assert.ok(logged.length > 0, r.stderr);
    assert.equal(logged, [...new Set(logged)], r.stderr);
    assert.not.match(r.stdout, /\x1b\[/, 'no colours or cursor moves without a terminal');
    assert.not.match(r.stderr, /\x1b\[/);
    const home = await h.site(hostOf(url));
    assert.is(home.status, 200);
    assert.is(home.body, '<h1>first</h1>');
    assert.is((await h.site(hostOf(url), '/about.html')).body, 'about');
    for (const left of ['/secret.txt', '/debug.log', '/node_modules/dep/index.js', '/.git/HEAD', '/host.txt'])
      assert.is.not((await h.site(hostOf(url), left)).status, 200, left);
  },
);

test(
  'redeploy with --json (through a resumable upload session): clean JSON, the new ' +
    'content is live, releases list both',
  async () => {
    const dir = site({ 'index.html': '<h1>second</h1>' });
    const r = await cli.run(['deploy', dir, '--json', '--resumable', '--name', 'my-site']);
    assert.is(r.code, 0, r.stderr);
    assert.is(r.stderr, '');
    // The operation's events as JSON lines as they came (streamed), then the outcome as the last line.
    const printed = lines(r.stdout).map((l) => JSON.parse(l));
    const out = printed.pop();
    const states = printed.filter((e) => e.event === 'state');
    assert.ok(states.length > 0 && printed.every((e) => ['state', 'log'].includes(e.event) && e.id), r.stdout);
    assert.is(states.at(-1).data.status, 'succeeded');
    assert.ok(
      printed.some((e) => e.event === 'log' && e.data.lines.length > 0),
      'build-log lines came as events',
    );
    assert.is(out.status, 'succeeded');
    assert.is(out.url, url);
    assert.is(out.operation.progress, 100);
    assert.is(out.archive.files, 1);
    projectId = out.project.id;
    assert.is(
      (await em().findOneOrFail(Version, { projectId }, { orderBy: { createdAt: 'desc' } })).archiveSize,
      out.archive.bytes,
    );
    assert.is((await h.site(hostOf(url))).body, '<h1>second</h1>');

    const rel = await cli.run(['releases', '--project', 'my-site', '--json']);
    assert.is(rel.code, 0, rel.stderr);
    const releases = JSON.parse(rel.stdout).releases;
    assert.is(releases.length, 2);
    assert.equal(
      releases.map((x: any) => x.live),
      [true, false],
    );
    assert.is(releases[0].operation_id, out.operation.id);
    const projects = await cli.run(['projects']);
    assert.match(projects.stdout, new RegExp(`my-site\\s+${projectId}\\s+draft\\s+${url.replace(/[./]/g, '\\$&')}`));
  },
);

test('hoist rollback makes the earlier release live again, with no build; the table shows provenance', async () => {
  const before = JSON.parse((await cli.run(['releases', '--project', 'my-site', '--json'])).stdout).releases;
  assert.equal(
    before.map((x: any) => [x.source, x.promotable]),
    [
      ['upload_session', false],
      [before[1].source, true],
    ],
  );
  assert.is(before[0].started_by, null, 'an upload session has no user: its URL is the credential');
  const r = await cli.run(['rollback', before[1].id, '--project', 'my-site']);
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, `Release ${before[1].id} is live: ${url}`);
  assert.is((await h.site(hostOf(url))).body, '<h1>first</h1>');
  const back = await cli.run(['rollback', before[0].id, '--project', 'my-site', '--json']);
  assert.is(back.code, 0, back.stderr);
  const out = JSON.parse(back.stdout);
  assert.equal([out.operation.kind, out.operation.status], ['promote', 'succeeded']);
  assert.is((await h.site(hostOf(url))).body, '<h1>second</h1>');
  const table = await cli.run(['releases', '--project', 'my-site']);
  assert.match(table.stdout, /PROMOTABLE\s+SOURCE\s+STARTED BY/);
  assert.match(table.stdout, /live\s+\S+\s+no\s+upload_session\s+-/);
  assert.match(table.stdout, /superseded\s+\S+\s+yes\s+/);
  const gone = await cli.run(['rollback', '00000000-0000-4000-8000-000000000000', '--project', 'my-site']);
  assert.is(gone.code, 1);
  assert.match(gone.stderr, /not found/i);
});

test('hoist deploy --preview prints the preview URL; the live site stays', async () => {
  const dir = site({ 'index.html': '<h1>preview</h1>' });
  const r = await cli.run(['deploy', dir, '--project', 'my-site', '--preview']);
  assert.is(r.code, 0, r.stderr);
  const preview = r.stdout.trim().split('\n').pop()!;
  assert.match(preview, /^http:\/\/my-site--[0-9a-f]{8}\.localhost:\d+\/$/);
  assert.is((await h.site(hostOf(url))).body, '<h1>second</h1>');
  const { releases } = JSON.parse((await cli.run(['releases', '--project', 'my-site', '--json'])).stdout);
  assert.equal([releases[0].target, releases[0].status, releases[0].url], ['preview', 'preview', preview]);
});

test('a redeploy of an unchanged 1,000-file folder sends its manifest only (under 100 KB)', async () => {
  const files = Object.fromEntries(
    Array.from({ length: 1000 }, (_, i) => [`pages/section-${i % 20}/page-${i}.html`, `<p>page ${i}</p>`]),
  );
  const dir = site({ 'index.html': 'many', ...files });
  const first = await cli.run(['deploy', dir, '--json', '--name', 'many-files']);
  assert.is(first.code, 0, first.stderr);
  assert.ok(JSON.parse(lines(first.stdout).at(-1)!).archive.bytes > 0);
  const again = await cli.run(['deploy', dir, '--json', '--name', 'many-files']);
  assert.is(again.code, 0, again.stderr);
  const out = JSON.parse(lines(again.stdout).at(-1)!);
  assert.is(out.status, 'succeeded');
  assert.is(out.archive.files, 1001);
  assert.is(out.archive.bytes, 0, 'no ZIP at all');
  assert.is((await h.site(hostOf(out.url), '/pages/section-7/page-7.html')).body, '<p>page 7</p>');
  // What the manifest weighs on the wire (gzip JSON, as the client sends it).
  const manifest = await manifestOf(listFolder(dir).files);
  const wire = gzipSync(JSON.stringify({ files: manifest })).length;
  assert.ok(wire < 100_000, `${wire} bytes`);
  // Without --json: the upload's start line once (an empty ZIP's progress is 0 of 0 at every chunk of the request).
  const plain = await cli.run(['deploy', dir, '--name', 'many-files']);
  assert.is(plain.code, 0, plain.stderr);
  assert.equal(plain.stderr.match(/Uploading .*/g), ['Uploading 0 B…'], plain.stderr);
});

test('env set | ls | rm through the API, per target; values are never shown', async () => {
  const set = await cli.run(['env', 'set', 'API_KEY', '--project', projectId, '--scope', 'runtime'], 's3cret-value\n');
  assert.is(set.code, 0, set.stderr);
  const ls = await cli.run(['env', 'ls', '--project', 'my-site', '--json']);
  const vars = JSON.parse(ls.stdout);
  assert.equal(
    vars.map((v: any) => [v.name, v.scope]),
    [['API_KEY', 'runtime']],
  );
  assert.not.match(ls.stdout, 's3cret');
  const bad = await cli.run(['env', 'set', 'PORT', 'x', '--project', 'my-site']);
  assert.is(bad.code, 1);
  assert.match(bad.stderr, /reserved/i);
  // A value for previews only sits beside it; rm --target removes that one alone.
  const preview = await cli.run([
    'env',
    'set',
    'API_KEY',
    'staging-value',
    '--project',
    projectId,
    '--target',
    'preview',
  ]);
  assert.is(preview.code, 0, preview.stderr);
  assert.match(preview.stdout, 'Set API_KEY (both, preview)');
  const both = JSON.parse((await cli.run(['env', 'ls', '--project', 'my-site', '--json'])).stdout);
  assert.equal(
    both.map((v: any) => [v.name, v.target]),
    [
      ['API_KEY', 'all'],
      ['API_KEY', 'preview'],
    ],
  );
  assert.is((await cli.run(['env', 'set', 'API_KEY', 'x', '--project', 'my-site', '--target', 'staging'])).code, 2);
  assert.is((await cli.run(['env', 'rm', 'API_KEY', '--project', 'my-site', '--target', 'preview'])).code, 0);
  assert.equal(
    JSON.parse((await cli.run(['env', 'ls', '--project', 'my-site', '--json'])).stdout).map((v: any) => v.target),
    ['all'],
  );
  assert.is((await cli.run(['env', 'rm', 'API_KEY', '--project', 'my-site'])).code, 0);
  assert.equal(JSON.parse((await cli.run(['env', 'ls', '--project', 'my-site', '--json'])).stdout), []);
  const missing = await cli.run(['env', 'ls', '--project', 'nope']);
  assert.is(missing.code, 1);
  assert.match(missing.stderr, 'No project "nope"');
});

test(
  'cancel mid-build: `hoist operations cancel` stops it, the watching deploy exits ' +
    '1 with the guidance; retry resumes it to live',
  async () => {
    const gated = await gatedProject(h, token, 'gated-cli');
    const dir = site(gated.files());
    const child = cli.spawn(['deploy', dir, '--project', 'gated-cli']);
    let stderr = '';
    let stdout = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((r) => child.on('close', r));
    const id = await until(() => /operation ([0-9a-f-]{36})/.exec(stderr)?.[1]);
    await h.waitFor(token, id, (op) => op.stages.build.status === 'running', 60_000);

    const cancel = await cli.run(['operations', 'cancel', id, '--json']);
    assert.is(cancel.code, 0, cancel.stderr);
    assert.is(JSON.parse(cancel.stdout).status, 'canceled');
    assert.is(await exited, 1, stderr);
    assert.match(stderr, 'The deployment canceled');
    assert.match(stderr, /Next step: .*retry/);
    assert.is(stdout, '');

    const again = await cli.run(['operations', 'cancel', id]);
    assert.is(again.code, 1, 'the client reads the guidance and does not cancel a canceled operation');
    assert.match(again.stderr, 'nothing to cancel');

    gated.open();
    const retry = await cli.run(['operations', 'retry', id, '--json']);
    assert.is(retry.code, 0, retry.stderr);
    assert.is((await h.waitFor(token, id, undefined, 60_000)).status, 'succeeded');
    const refused = await cli.run(['operations', 'retry', id]);
    assert.is(refused.code, 1);
    assert.match(refused.stderr, 'is not to be retried: The deployment succeeded');
    const show = await cli.run(['operations', 'show', id]);
    assert.match(show.stdout, `operation ${id}: succeeded, 100%`);
  },
);

test("`hoist operations list`: the account's operations, newest first, by project and status, by page", async () => {
  const all = await cli.run(['operations', 'list', '--json']);
  assert.is(all.code, 0, all.stderr);
  const page = JSON.parse(all.stdout);
  assert.ok(page.operations.length >= 4, all.stdout);
  const gated = JSON.parse((await cli.run(['operations', 'list', '--project', 'gated-cli', '--json'])).stdout);
  assert.is(gated.operations.length, 1);
  assert.is(gated.operations[0].id, page.operations[0].id);
  assert.is(gated.operations[0].status, 'succeeded');
  const canceled = await cli.run(['operations', 'list', '--status', 'canceled', '--json']);
  assert.equal(JSON.parse(canceled.stdout).operations, []);
  const one = await cli.run(['operations', 'list', '--limit', '1']);
  assert.is(one.code, 0, one.stderr);
  assert.match(one.stdout, /^ID\s+KIND\s+STATUS\s+PROGRESS\s+PROJECT\s+CREATED\n/);
  assert.match(one.stdout, `${page.operations[0].id}  deploy  succeeded`);
  const cursor = /more: --cursor (\S+)/.exec(one.stdout)![1];
  const second = JSON.parse(
    (await cli.run(['operations', 'list', '--limit', '1', '--cursor', cursor, '--json'])).stdout,
  );
  assert.is(second.operations[0].id, page.operations[1].id);
  assert.is((await cli.run(['operations', 'list', '--limit', '0'])).code, 2);
  assert.is.not((await cli.run(['operations', 'list', '--status', 'done'])).code, 0);
  const missing = await cli.run(['operations', 'list', '--project', 'nope']);
  assert.is(missing.code, 1);
  assert.match(missing.stderr, 'No project "nope"');
});

test('a plan limit: limit, usage and the plan that allows it; nothing is created', async () => {
  const free = await accountWithPassword(h, 'free');
  const other = remoteCli(h);
  assert.is((await other.run(['login', '--email', free.email], free.password)).code, 0);
  const t = JSON.parse(readFileSync(join(other.configHome, 'hoist', 'credentials.json'), 'utf8')).token;
  for (const name of ['p1', 'p2', 'p3']) {
    const res = await fetch(`${h.api}/api/v1/projects/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
    });
    assert.is(res.status, 201);
  }
  const dir = site({ 'index.html': 'four' });
  const r = await other.run(['deploy', dir, '--name', 'fourth']);
  assert.is(r.code, 1);
  assert.match(r.stderr, 'Your plan (free) does not allow this');
  assert.match(r.stderr, 'Limit 3, usage 3. The pro plan allows it.');
  const j = await other.run(['deploy', dir, '--name', 'fourth', '--json']);
  const error = JSON.parse(j.stdout).error;
  assert.equal(
    [error.code, error.plan, error.required_plan, error.limit, error.usage, error.feature],
    ['plan_restricted', 'free', 'pro', 3, 3, 'projects'],
  );
  assert.is(JSON.parse((await other.run(['projects', '--json'])).stdout).length, 3);
});

test('an archive over the plan limit is refused before uploading, showing size and limit', async () => {
  const free = await accountWithPassword(h, 'free');
  const other = remoteCli(h);
  assert.is((await other.run(['login', '--email', free.email], free.password)).code, 0);
  const dir = site({ 'index.html': 'big', 'blob.bin': randomBytes(50_100_000) });
  const before = await em().count(Version, {});
  const r = await other.run(['deploy', dir, '--name', 'too-big']);
  assert.is(r.code, 1);
  assert.match(
    r.stderr,
    /The archive is 50\.\d MB \(\d+ bytes\); the limit is 50\.0 MB \(50000000 bytes, plan free\)\. Nothing was uploaded\./,
  );
  assert.match(r.stderr, 'The pro plan allows 100 MB');
  assert.not.match(r.stderr, 'Uploading');
  assert.is(await em().count(Version, {}), before);
  assert.is(JSON.parse((await other.run(['projects', '--json'])).stdout).length, 0);
});

test(
  'an expired or revoked login: the CLI says to run hoist login; logout revokes the ' + 'token and removes the file',
  async () => {
    const saved = credentials();
    writeFileSync(
      join(cli.configHome, 'hoist', 'credentials.json'),
      JSON.stringify({ ...saved, expires_at: new Date(Date.now() - 1000).toISOString() }),
    );
    const local = await cli.run(['projects']);
    assert.is(local.code, 1);
    assert.match(local.stderr, /expired at .*: run `hoist login` again/);
    writeFileSync(join(cli.configHome, 'hoist', 'credentials.json'), JSON.stringify(saved));

    await em().nativeUpdate(Session, {}, { expiresAt: new Date(Date.now() - 1000) });
    // Written behind Hoist's back: the API's cache of verified tokens learns it as from the change feed.
    h.running.kernel.get(SESSION_REVOCATIONS).cache.drop(null);
    const server = await cli.run(['whoami']);
    assert.is(server.code, 1);
    assert.match(server.stderr, 'Your login has expired or was revoked: run `hoist login` again.');
    const env = await cli.run(['whoami', '--json'], undefined, { HOIST_TOKEN: saved.token });
    assert.is(JSON.parse(env.stdout).error.code, 'unauthorized');

    assert.is((await cli.run(['login'], `${user.email}\n${user.password}\n`)).code, 0);
    const fresh = credentials().token;
    const out = await cli.run(['logout']);
    assert.is(out.code, 0, out.stderr);
    assert.match(out.stdout, 'Logged out');
    assert.is((await fetch(`${h.api}/api/v1/me`, { headers: { authorization: `Bearer ${fresh}` } })).status, 401);
    assert.is(statSync(join(cli.configHome, 'hoist', 'credentials.json'), { throwIfNoEntry: false }), undefined);
    assert.match((await cli.run(['projects'])).stderr, 'Not logged in');
  },
);

async function until<T>(get: () => T | undefined, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = get();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

test.run();
