// The real `hoist members` commands against a live Hoist: invite, ls, role and rm as an owner; bad usage exits 2
// before any request; a refusal (a member managing members) exits 1 with the API's reason.
import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { liveHoist, type LiveHoist } from '../helpers/live.js';
import { accountWithPassword, remoteCli, type RemoteCli } from '../helpers/remote-cli.js';

let h: LiveHoist;
let cli: RemoteCli;
let owner: { email: string; password: string };
test.before(async () => {
  h = await liveHoist();
  cli = remoteCli(h);
  owner = await accountWithPassword(h);
  const login = await cli.run(['login'], `${owner.email}\n${owner.password}\n`);
  assert.is(login.code, 0, login.stderr);
});
test.after(async () => h?.close());

const lsJson = async () => {
  const r = await cli.run(['members', 'ls', '--json']);
  assert.is(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as { id: string; email: string; role: string; status: string }[];
};

test('bad usage exits 2 before any request', async () => {
  const away = { HOIST_TOKEN: 'x', HOIST_API_URL: 'http://127.0.0.1:9' };
  for (const args of [
    ['invite'],
    ['invite', 'a@example.com', '--role', 'admin'],
    ['role', 'not-an-id', 'owner'],
    ['role', randomUUID(), 'admin'],
    ['rm', 'not-an-id'],
  ]) {
    const r = await cli.run(['members', ...args], undefined, away);
    assert.is(r.code, 2, `${JSON.stringify(args)}: ${r.stderr}`);
    assert.is(r.stdout, '');
  }
});

test('an owner invites, lists, changes a role and removes; the API refuses what it refuses (exit 1)', async () => {
  const invited = await cli.run(['members', 'invite', 'Ada@Example.com']);
  assert.is(invited.code, 0, invited.stderr);
  assert.match(invited.stdout, 'Invited ada@example.com as member');
  const list = await lsJson();
  assert.equal(
    list.map((m) => [m.email, m.role, m.status]),
    [
      [owner.email, 'owner', 'active'],
      ['ada@example.com', 'member', 'invited'],
    ],
  );
  const table = await cli.run(['members', 'ls']);
  assert.match(table.stdout, /ada@example\.com\s+member\s+invited/);
  const ada = list[1].id;

  const role = await cli.run(['members', 'role', ada, 'owner']);
  assert.is(role.code, 0, role.stderr);
  assert.match(role.stdout, 'ada@example.com is now owner.');
  const taken = await cli.run(['members', 'invite', owner.email, '--json']);
  assert.is(taken.code, 1);
  assert.is(JSON.parse(taken.stdout).error.code, 'conflict');

  const rm = await cli.run(['members', 'rm', ada]);
  assert.is(rm.code, 0, rm.stderr);
  const self = (await lsJson())[0].id;
  const last = await cli.run(['members', 'rm', self]);
  assert.is(last.code, 1);
  assert.match(last.stderr, 'needs an owner');
  assert.equal(
    (await lsJson()).map((m) => m.email),
    [owner.email],
  );
});

test.run();
