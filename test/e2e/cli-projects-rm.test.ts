// The real `hoist projects rm` against a live Hoist: without --yes when not on a terminal it is refused and nothing
// goes; with --yes the project is deleted (its delete_project operation followed to the end), the API answers 404 for
// it, its URL stops serving, and what went with it is printed. On a terminal it asks first. `hoist projects` still
// lists, as does `hoist projects ls`.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hostOf, liveHoist, type LiveHoist } from '../helpers/live.js';
import { accountWithPassword, remoteCli, type RemoteCli } from '../helpers/remote-cli.js';
import { terminalCli, type TerminalCli } from '../helpers/terminal-cli.js';

let h: LiveHoist;
let cli: RemoteCli;
let terminal: TerminalCli;
let token: string;

test.before(async () => {
  h = await liveHoist({ healthTimeoutSeconds: 10 });
  cli = remoteCli(h);
  terminal = terminalCli(cli);
  const user = await accountWithPassword(h);
  const login = await cli.run(['login'], `${user.email}\n${user.password}\n`);
  assert.is(login.code, 0, login.stderr);
  const res = await fetch(`${h.api}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(user),
  });
  token = (await res.json()).token;
});
test.after(async () => {
  terminal?.close();
  await h?.close();
});

/** Deploys a one-page site `name` with the CLI; returns its project as the API lists it. */
async function deployed(name: string) {
  const dir = join(mkdtempSync(join(tmpdir(), 'hoist-cli-projects-')), name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'index.html'), `<h1>${name}</h1>`);
  const r = await cli.run(['deploy', dir]);
  assert.is(r.code, 0, r.stderr);
  const { body } = await h.get(token, '/api/v1/projects');
  return body.projects.find((p: any) => p.name === name) as { id: string; name: string; slug: string; url: string };
}

const listed = async () => {
  const r = await cli.run(['projects', '--json']);
  assert.is(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { name: string }[]).map((p) => p.name).sort();
};

test('projects and projects ls still list the projects, as a table or JSON', async () => {
  await deployed('keeper');
  const bare = await cli.run(['projects']);
  assert.is(bare.code, 0, bare.stderr);
  assert.match(bare.stdout, /^NAME\s+ID\s+VISIBILITY\s+URL\nkeeper\s+[0-9a-f-]{36}\s+draft\s+http:\/\//);
  const ls = await cli.run(['projects', 'ls']);
  assert.equal([ls.code, ls.stdout], [0, bare.stdout]);
  const json = await cli.run(['projects', 'ls', '--json']);
  assert.equal(JSON.parse(json.stdout), JSON.parse((await cli.run(['projects', '--json'])).stdout));
  const bad = await cli.run(['projects', 'nonsense']);
  assert.is(bad.code, 2, 'an unknown word is bad usage');
});

test('rm when not on a terminal without --yes is refused (exit 2): the project and its site stay', async () => {
  const p = await deployed('doomed-site');
  const r = await cli.run(['projects', 'rm', 'doomed-site']);
  assert.is(r.code, 2, r.stderr);
  assert.is(r.stdout, '');
  assert.is(
    r.stderr,
    'hoist: Refusing to remove project "doomed-site" without --yes when not on a terminal (nothing was removed): ' +
      'run `hoist projects rm doomed-site --yes`.\n',
  );
  const json = await cli.run(['projects', 'rm', p.id, '--json']);
  assert.is(json.code, 2);
  assert.is(JSON.parse(json.stdout).error.code, 'confirmation_required');
  assert.is((await h.get(token, `/api/v1/projects/${p.id}/`)).status, 200);
  assert.is((await h.site(hostOf(p.url))).body, '<h1>doomed-site</h1>');
  assert.equal(await listed(), ['doomed-site', 'keeper']);
});

test('rm --yes deletes the project, following the operation, and says what went with it', async () => {
  const p = (await h.get(token, '/api/v1/projects')).body.projects.find((x: any) => x.name === 'doomed-site');
  const domain = await h.call(token, 'POST', `/api/v1/projects/${p.id}/domains`, { hostname: 'www.doomed.test' });
  assert.is(domain.status, 201, JSON.stringify(domain.body));
  const env = await cli.run(['env', 'set', 'API_KEY', '--project', 'doomed-site'], 'a-secret-value');
  assert.is(env.code, 0, env.stderr);

  const r = await cli.run(['projects', 'rm', 'doomed-site', '--yes']);
  assert.is(r.code, 0, r.stderr);
  assert.is(
    r.stdout,
    `Deleted project doomed-site (${p.id}): ${p.url} no longer serves, and the slug ${p.slug} is free again.\n` +
      'Removed with it: 1 release, 1 custom domain (www.doomed.test), 1 environment variable, 0 webhooks and ' +
      '0 deploy hooks.\n',
  );
  const progress = r.stderr.trim().split('\n');
  assert.match(progress.at(-1)!, /^Deleting doomed-site \(operation [0-9a-f-]{36}\): succeeded 100%$/);
  const opId = /operation ([0-9a-f-]{36})/.exec(progress[0])![1];

  const gone = await h.get(token, `/api/v1/projects/${p.id}/`);
  assert.is(gone.status, 404);
  assert.is(gone.body.error.code, 'not_found');
  const op = await h.get(token, `/api/v1/operations/${opId}`);
  assert.equal([op.body.kind, op.body.status], ['delete_project', 'succeeded']);
  assert.is((await h.site(hostOf(p.url))).status, 404, 'its URL no longer serves');
  assert.equal(await listed(), ['keeper']);

  const again = await cli.run(['projects', 'rm', 'doomed-site', '--yes']);
  assert.is(again.code, 1);
  assert.is(again.stderr, 'hoist: No project "doomed-site" in your account: `hoist projects` lists them.\n');
});

test('rm --yes --json by id prints the project, what went with it and the finished operation', async () => {
  const p = await deployed('json-doomed');
  const r = await cli.run(['projects', 'rm', p.id, '--yes', '--json']);
  assert.is(r.code, 0, r.stderr);
  assert.is(r.stderr, '', 'no progress lines with --json');
  const out = JSON.parse(r.stdout);
  assert.equal(out.removed, { id: p.id, name: 'json-doomed', slug: p.slug, url: p.url });
  assert.equal(
    [out.releases, out.domains, out.environment_variables, out.webhooks, out.deploy_hooks],
    [1, [], 0, 0, 0],
  );
  assert.equal(
    [out.operation.kind, out.operation.status, out.operation.progress],
    ['delete_project', 'succeeded', 100],
  );
  assert.is((await h.get(token, `/api/v1/projects/${p.id}/`)).status, 404);
  assert.equal(await listed(), ['keeper']);
});

test('rm on a terminal asks first, naming what goes: "n" keeps it, "y" deletes it with a progress bar', async () => {
  if (!terminal.available) return console.log('! tmux is not installed: the terminal test is skipped');
  const p = await deployed('tty-doomed');
  terminal.start('no', ['projects', 'rm', 'tty-doomed']);
  const asked = await terminal.until('no', /\[y\/N\] $/m);
  assert.match(
    asked,
    `Delete project tty-doomed (${p.id}, ${p.url}) with 1 release, 0 custom domains, 0 environment variables, ` +
      '0 webhooks and 0 deploy hooks? This cannot be undone. [y/N] ',
  );
  terminal.type('no', 'Enter');
  const kept = await terminal.until('no', /EXIT=\d/);
  assert.match(kept, 'Canceled: nothing was removed.');
  assert.match(kept, 'EXIT=1');
  assert.is((await h.get(token, `/api/v1/projects/${p.id}/`)).status, 200);

  terminal.start('yes', ['projects', 'rm', p.id]);
  await terminal.until('yes', /\[y\/N\] $/m);
  terminal.type('yes', 'y', 'Enter');
  const gone = await terminal.until('yes', /EXIT=\d/);
  assert.match(gone, /Deleting tty-doomed {2}█{24} {2}succeeded 100%/);
  assert.match(gone, `Deleted project tty-doomed (${p.id})`);
  assert.match(gone, 'EXIT=0');
  assert.is((await h.get(token, `/api/v1/projects/${p.id}/`)).status, 404);
});

test('rm of a project that is not there: exit 1, named; --json gives not_found', async () => {
  const r = await cli.run(['projects', 'rm', 'nope', '--yes', '--json']);
  assert.is(r.code, 1);
  assert.is(JSON.parse(r.stdout).error.code, 'not_found');
  assert.equal(await listed(), ['keeper']);
});

test.run();
