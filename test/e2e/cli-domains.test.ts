// The real `hoist domains` commands against a live Hoist whose DNS lookups go to a real DNS server on loopback: add and
// ls print the records to create and the state; verify says what it found and what is missing, before and after the
// server answers; rm asks (on a terminal), refuses without --yes elsewhere, and removes with it; the server's refusals
// of bad hostnames come through with exit 1.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js';
import { liveHoist, type LiveHoist } from '../helpers/live.js';
import { accountWithPassword, remoteCli, type RemoteCli } from '../helpers/remote-cli.js';
import { terminalCli, type TerminalCli } from '../helpers/terminal-cli.js';

const HOST = 'app.cli-customer.test';
const project = ['--project', 'domain-site'];
let h: LiveHoist;
let dns: TestDnsServer;
let cli: RemoteCli;
let terminal: TerminalCli;
let token: string;
let projectId: string;
let domainId: string;
let txt: { name: string; value: string };
let cname: { name: string; value: string };

// A live Hoist asking the test DNS server (its own checks too rare to move a domain: only verify does), a user logged
// in with the CLI, and a static site deployed with it.
test.before(async () => {
  dns = await startDnsServer();
  h = await liveHoist({ dnsServers: dns.address, dnsTimeoutMs: 2000, dnsTries: 1, domainCheckSeconds: 3600 });
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
  const dir = join(mkdtempSync(join(tmpdir(), 'hoist-cli-domains-')), 'domain-site');
  mkdirSync(dir);
  writeFileSync(join(dir, 'index.html'), '<h1>on my own domain</h1>');
  const deploy = await cli.run(['deploy', dir]);
  assert.is(deploy.code, 0, deploy.stderr);
  projectId = (await h.get(token, '/api/v1/projects')).body.projects[0].id;
});
test.after(async () => {
  terminal?.close();
  await h?.close();
  await dns?.close();
});

const apiDomains = async () => (await h.get(token, `/api/v1/projects/${projectId}/domains`)).body.domains as any[];

/** The rows of the records table the CLI printed (`TYPE NAME VALUE` and the rows under it), as cells. */
function recordRows(out: string): string[][] {
  const lines = out.split('\n');
  const head = lines.findIndex((l) => /^\s+TYPE\s+NAME\s+VALUE$/.test(l));
  assert.ok(head >= 0, `a records table:\n${out}`);
  return lines.slice(head + 1, head + 3).map((l) => l.trim().split(/\s+/));
}

/** The edge's answer for `host` once it is `status` (5 s at most). */
async function edgeAnswers(host: string, status: number) {
  const end = Date.now() + 5000;
  for (;;) {
    const res = await h.site(host);
    if (res.status === status || Date.now() > end) return res;
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('bad usage exits 2 before any request: no hostname, no domain', async () => {
  const away = { HOIST_TOKEN: 'x', HOIST_API_URL: 'http://127.0.0.1:9' };
  for (const args of [
    ['add', ''],
    ['add', '  '],
    ['verify', ''],
    ['rm', ' ', '--yes'],
  ]) {
    const r = await cli.run(['domains', ...args, ...project], undefined, away);
    assert.is(r.code, 2, `${JSON.stringify(args)}: ${r.stderr}`);
    assert.is(r.stdout, '');
  }
  const empty = await cli.run(['domains', 'add', '', ...project]);
  assert.is(empty.code, 2);
  assert.match(empty.stderr, 'a custom domain needs a hostname');
  const ls = await cli.run(['domains', 'ls', ...project]);
  assert.is(ls.code, 0, ls.stderr);
  assert.is(ls.stdout, 'no custom domains on domain-site: `hoist domains add <hostname>` adds one\n');
});

test('bad hostnames: the server says why, exit 1, and nothing is added', async () => {
  for (const bad of [
    'cli-customer.test',
    'example.co.uk',
    '10.0.0.1',
    '*.cli-customer.test',
    'bad_host!.example.org',
  ]) {
    const api = await h.call(token, 'POST', `/api/v1/projects/${projectId}/domains`, { hostname: bad });
    assert.is(api.status, 400, `${bad}: ${JSON.stringify(api.body)}`);
    const r = await cli.run(['domains', 'add', bad, ...project]);
    assert.is(r.code, 1, `${bad}: ${r.stderr}`);
    assert.is(r.stdout, '');
    assert.ok(r.stderr.startsWith(`hoist: ${api.body.error.message} (invalid_request, request `), r.stderr);
    const json = await cli.run(['domains', 'add', bad, ...project, '--json']);
    assert.is(json.code, 1);
    const { error } = JSON.parse(json.stdout);
    assert.equal(
      [error.code, error.message, error.details.field],
      ['invalid_request', api.body.error.message, 'hostname'],
    );
  }
  const apex = await cli.run(['domains', 'add', 'cli-customer.test', ...project]);
  assert.match(apex.stderr, /apex|subdomain/i, 'the reason is named');
  assert.equal(await apiDomains(), []);
});

test('add prints the state and the two DNS records to create, as the API has them', async () => {
  const r = await cli.run(['domains', 'add', HOST, ...project]);
  assert.is(r.code, 0, r.stderr);
  const [d] = await apiDomains();
  domainId = d.id;
  [txt, cname] = d.records;
  assert.equal([txt.name, cname.name], [`_hoist-challenge.${HOST}`, HOST]);
  const lines = r.stdout.split('\n');
  assert.is(lines[0], `Added ${HOST} to domain-site (domain ${domainId}).`);
  assert.is(lines[1], '  Status: pending: the TXT record does not hold the token yet; not served');
  assert.match(r.stdout, 'Create these DNS records at your DNS provider:');
  assert.equal(recordRows(r.stdout), [
    ['TXT', txt.name, txt.value],
    ['CNAME', cname.name, cname.value],
  ]);
  assert.match(txt.value, /^hoist-[0-9a-f]{40}$/);
  assert.match(r.stdout, `Then run \`hoist domains verify ${HOST} --project domain-site\``);

  const again = await cli.run(['domains', 'add', HOST.toUpperCase(), ...project, '--json']);
  assert.is(again.code, 1, 'the project has it already');
  assert.equal(JSON.parse(again.stdout).error.code, 'conflict');
  assert.is((await apiDomains()).length, 1);
});

test('ls shows each domain with its state and the records; --json is the API list', async () => {
  const r = await cli.run(['domains', 'ls', ...project]);
  assert.is(r.code, 0, r.stderr);
  assert.ok(r.stdout.startsWith(`${HOST} (domain ${domainId})\n  Status: pending`), r.stdout);
  assert.match(r.stdout, 'Waiting for the DNS records');
  assert.equal(recordRows(r.stdout), [
    ['TXT', txt.name, txt.value],
    ['CNAME', cname.name, cname.value],
  ]);
  const json = await cli.run(['domains', 'ls', ...project, '--json']);
  assert.is(json.code, 0, json.stderr);
  assert.equal(JSON.parse(json.stdout), await apiDomains());
});

test('verify before the DNS server answers: still pending, and says what is missing (exit 1)', async () => {
  const r = await cli.run(['domains', 'verify', HOST, ...project]);
  assert.is(r.code, 1, r.stderr);
  const lines = r.stdout.split('\n');
  assert.is(lines[0], `${HOST} is still pending: the TXT record does not hold the token yet. Not served.`);
  assert.match(lines[1], `No TXT record at ${txt.name}: add one holding ${txt.value}.`);
  assert.match(lines[1], `No CNAME record at ${HOST}: point it at ${cname.value}.`);
  assert.equal(recordRows(r.stdout)[0], ['TXT', txt.name, txt.value]);
  assert.ok(dns.asked.includes(`TXT ${txt.name}`), 'the DNS server was asked');
  const [d] = await apiDomains();
  assert.ok(d.last_checked_at, 'checked now');

  dns.set(txt.name, 'TXT', ['hoist-someone-else']);
  const wrong = await cli.run(['domains', 'verify', HOST, ...project, '--json']);
  assert.is(wrong.code, 1);
  const view = JSON.parse(wrong.stdout);
  assert.is(view.status, 'pending');
  assert.match(view.message, `holds "hoist-someone-else", not the token ${txt.value}`);
  assert.is((await h.site(HOST)).status, 404, 'not served');
});

test('verify once the TXT record is there: verified, the CNAME still missing; then active and served', async () => {
  dns.set(txt.name, 'TXT', [txt.value]);
  const half = await cli.run(['domains', 'verify', `${HOST.toUpperCase()}.`, ...project]);
  assert.is(half.code, 1, half.stderr);
  const lines = half.stdout.split('\n');
  assert.is(
    lines[0],
    `${HOST} is verified: found the TXT record (the name is yours); still missing: the CNAME. Not served yet.`,
  );
  assert.is(lines[1], `  No CNAME record at ${HOST}: point it at ${cname.value}.`);
  assert.is((await h.site(HOST)).status, 404, 'a verified domain without its CNAME is not served');

  dns.set(cname.name, 'CNAME', [cname.value]);
  const r = await cli.run(['domains', 'verify', domainId, ...project]);
  assert.is(r.code, 0, r.stdout + r.stderr);
  const [d] = await apiDomains();
  assert.equal([d.status, d.message], ['active', null]);
  const out = r.stdout.split('\n');
  assert.is(out[0], `${HOST} is active: found both DNS records.`);
  assert.is(out[1], `  Served at ${d.url}. Keep these DNS records (they are checked again):`);
  assert.not.match(r.stdout, 'hoist domains verify', 'nothing left to do');
  const site = await edgeAnswers(HOST, 200);
  assert.is(site.body, '<h1>on my own domain</h1>');
  const ls = await cli.run(['domains', 'ls', ...project]);
  assert.match(ls.stdout, '  Status: active: both records are right; served');
});

test('rm when not on a terminal without --yes is refused (exit 2) and removes nothing', async () => {
  const r = await cli.run(['domains', 'rm', HOST, ...project]);
  assert.is(r.code, 2, r.stderr);
  assert.is(r.stdout, '');
  assert.is(
    r.stderr,
    `hoist: Refusing to remove the custom domain ${HOST} without --yes when not on a terminal (nothing was removed): ` +
      `run \`hoist domains rm ${HOST} --project domain-site --yes\`.\n`,
  );
  const json = await cli.run(['domains', 'rm', HOST, ...project, '--json']);
  assert.is(json.code, 2);
  assert.is(JSON.parse(json.stdout).error.code, 'confirmation_required');
  const [d] = await apiDomains();
  assert.equal([d.id, d.status], [domainId, 'active']);
  assert.is((await h.site(HOST)).status, 200, 'still served');
});

test('rm of a domain the project does not have: exit 1, named', async () => {
  const r = await cli.run(['domains', 'rm', 'other.cli-customer.test', ...project, '--yes']);
  assert.is(r.code, 1);
  assert.is(
    r.stderr,
    'hoist: No custom domain "other.cli-customer.test" on domain-site: `hoist domains ls --project domain-site` ' +
      'lists them.\n',
  );
  const v = await cli.run(['domains', 'verify', 'other.cli-customer.test', ...project, '--json']);
  assert.is(v.code, 1);
  assert.is(JSON.parse(v.stdout).error.code, 'not_found');
});

test('rm on a terminal asks first: "n" keeps the domain (exit 1), "y" removes it', async () => {
  if (!terminal.available) return console.log('! tmux is not installed: the terminal test is skipped');
  terminal.start('no', ['domains', 'rm', HOST, ...project]);
  const asked = await terminal.until('no', /\[y\/N\] $/m);
  assert.match(asked, `Remove ${HOST} from domain-site? Hoist stops serving it there at once. [y/N] `);
  terminal.type('no', 'n', 'Enter');
  const kept = await terminal.until('no', /EXIT=\d/);
  assert.match(kept, 'Canceled: nothing was removed.');
  assert.match(kept, 'EXIT=1');
  assert.equal(
    (await apiDomains()).map((d) => d.id),
    [domainId],
  );

  terminal.start('yes', ['domains', 'rm', HOST, ...project]);
  await terminal.until('yes', /\[y\/N\] $/m);
  terminal.type('yes', 'y', 'Enter');
  const gone = await terminal.until('yes', /EXIT=\d/);
  assert.match(gone, `Removed ${HOST} from domain-site; Hoist no longer serves it`);
  assert.match(gone, 'EXIT=0');
  assert.equal(await apiDomains(), []);
  // Added back for the next test, which removes it with --yes.
  const added = await cli.run(['domains', 'add', HOST, ...project]);
  assert.is(added.code, 0, added.stderr);
  domainId = (await apiDomains())[0].id;
});

test('rm --yes removes the domain (named by hostname, any case): the API and the edge forget it', async () => {
  const r = await cli.run(['domains', 'rm', `${HOST.toUpperCase()}.`, ...project, '--yes']);
  assert.is(r.code, 0, r.stderr);
  assert.is(r.stdout, `Removed ${HOST} from domain-site; Hoist no longer serves it (its DNS records can go).\n`);
  assert.equal(await apiDomains(), []);
  assert.is((await edgeAnswers(HOST, 404)).status, 404);
  const again = await cli.run(['domains', 'add', HOST, ...project, '--json']);
  assert.is(again.code, 0, again.stderr);
  const json = await cli.run(['domains', 'rm', JSON.parse(again.stdout).id, ...project, '--yes', '--json']);
  assert.is(json.code, 0, json.stderr);
  assert.equal(JSON.parse(json.stdout), { removed: JSON.parse(again.stdout).id, hostname: HOST, project: projectId });
  const ls = await cli.run(['domains', 'ls', ...project]);
  assert.is(ls.stdout, 'no custom domains on domain-site: `hoist domains add <hostname>` adds one\n');
});

test.run();
