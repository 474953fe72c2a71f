// The real `hoist tokens ls | create | revoke` commands against a live Hoist: a token made by the CLI works on the
// agent-tool interface until revoked; bad usage exits 2 before any request; a refusal exits 1 with the API's reason.
import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { liveHoist, type LiveHoist } from '../helpers/live.js';
import { accountWithPassword, remoteCli, type RemoteCli } from '../helpers/remote-cli.js';

let h: LiveHoist;
let cli: RemoteCli;
test.before(async () => {
  h = await liveHoist();
  cli = remoteCli(h);
  const owner = await accountWithPassword(h);
  const login = await cli.run(['login'], `${owner.email}\n${owner.password}\n`);
  assert.is(login.code, 0, login.stderr);
});
test.after(async () => h?.close());

const whoami = (token: string) =>
  fetch(`${h.api}/agent/v1/whoami`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);

test('bad usage exits 2 before any request', async () => {
  const away = { HOIST_TOKEN: 'x', HOIST_API_URL: 'http://127.0.0.1:9' };
  for (const args of [
    ['create'],
    ['create', '  '],
    ['create', 'agent', '--ttl', '10'],
    ['create', 'agent', '--ttl', 'soon'],
    ['create', 'agent', '--ttl', String(31 * 86400)],
    ['revoke'],
    ['revoke', 'not-an-id'],
  ]) {
    const r = await cli.run(['tokens', ...args], undefined, away);
    assert.is(r.code, 2, `${JSON.stringify(args)}: ${r.stderr}`);
    assert.is(r.stdout, '');
  }
});

test('create prints a token the agent-tool interface takes; ls shows it; revoke stops it', async () => {
  const made = await cli.run(['tokens', 'create', 'laptop agent', '--ttl', '600']);
  assert.is(made.code, 0, made.stderr);
  const token = made.stdout.trim();
  assert.is(await whoami(token), 200);
  const json = await cli.run(['tokens', 'create', 'ci agent', '--json']);
  assert.is(json.code, 0, json.stderr);
  const second = JSON.parse(json.stdout);
  assert.is(second.name, 'ci agent');
  const ls = await cli.run(['tokens', 'ls', '--json']);
  assert.is(ls.code, 0, ls.stderr);
  const list = JSON.parse(ls.stdout) as { id: string; name: string; source: string }[];
  assert.equal(
    list.map((g) => [g.name, g.source]),
    [
      ['ci agent', 'api'],
      ['laptop agent', 'api'],
    ],
  );
  const table = await cli.run(['tokens', 'ls']);
  assert.match(table.stdout, /laptop agent\s+api/);
  const first = list[1].id;
  const revoked = await cli.run(['tokens', 'revoke', first]);
  assert.is(revoked.code, 0, revoked.stderr);
  assert.match(revoked.stdout, `Revoked agent token ${first}.`);
  assert.is(await whoami(token), 401);
  assert.is(await whoami(second.token), 200);
  const again = await cli.run(['tokens', 'revoke', first]);
  assert.is(again.code, 1);
  assert.match(again.stderr, 'not found');
  const unknown = await cli.run(['tokens', 'revoke', randomUUID(), '--json']);
  assert.is(unknown.code, 1);
  assert.is(JSON.parse(unknown.stdout).error.code, 'not_found');
});

test.run();
