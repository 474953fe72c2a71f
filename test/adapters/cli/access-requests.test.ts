// legs: db
import { RequestContext } from '@mikro-orm/core';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  ACCESS_REQUEST_SERVICE,
  type AccessRequestService,
} from '../../../core/access-requests/access-request-service.js';
import { AccessRequest } from '../../../core/entities/access-request.js';
import { Account } from '../../../core/entities/account.js';
import { User } from '../../../core/entities/user.js';
import { testCli, type TestCli } from '../../helpers/cli.js';

let cli: TestCli;
test.before(async () => {
  cli = await testCli();
});
test.after(async () => cli?.close());

const submit = (input: { email: string; name?: string; message?: string }) =>
  RequestContext.create(cli.kernel.orm.em.fork(), () =>
    cli.kernel.get<AccessRequestService>(ACCESS_REQUEST_SERVICE).submit(input),
  );
/** Requests, users and accounts as stored, to check that a refused command wrote nothing. */
const stored = () =>
  cli.query(async (em) => ({
    requests: (await em.find(AccessRequest, {}, { orderBy: { email: 'asc' } })).map(
      (r) => `${r.email} ${r.status} ${r.approvedAt?.toISOString()}`,
    ),
    users: (await em.find(User, {}, { orderBy: { email: 'asc' } })).map((u) => `${u.id} ${u.email}`),
    accounts: await em.count(Account),
  }));

test('access-requests list with none says so', async () => {
  const res = await cli.run(['access-requests', 'list']);
  assert.is(res.code, 0, res.stderr);
  assert.is(res.stdout, 'no access requests\n');
});

test('access-requests list shows the pending requests, oldest first', async () => {
  await submit({ email: 'Ann@example.com', name: 'Ann', message: 'I would like\nto deploy my blog' });
  await sleep(20);
  await submit({ email: 'bob@example.com' });
  const [table, json] = await Promise.all([
    cli.run(['access-requests', 'list']),
    cli.run(['access-requests', 'list', '--status', 'pending', '--json']),
  ]);
  assert.is(table.code, 0, table.stderr);
  const lines = table.stdout.trimEnd().split('\n');
  assert.is(lines.length, 3);
  assert.match(lines[0], /^E-MAIL\s+STATUS\s+REQUESTED\s+NAME\s+MESSAGE$/);
  assert.match(lines[1], /^ann@example\.com {2}pending {2}\S+Z {2}Ann {3}I would like to deploy my blog$/);
  assert.match(lines[2], /^bob@example\.com {2}pending {2}\S+Z$/);
  const rows = JSON.parse(json.stdout);
  assert.equal(
    rows.map((r: { email: string; status: string; name: string | null; approved_at: null }) => [
      r.email,
      r.status,
      r.name,
      r.approved_at,
    ]),
    [
      ['ann@example.com', 'pending', 'Ann', null],
      ['bob@example.com', 'pending', null, null],
    ],
  );
});

test('access-requests approve creates the account without a password and mails how to set one', async () => {
  const res = await cli.run(['access-requests', 'approve', '--email', 'ANN@example.com']);
  assert.is(res.code, 0, res.stderr);
  assert.match(
    res.stdout,
    /^approved ann@example\.com: created user [0-9a-f-]{36} in account [0-9a-f-]{36}; mailed instructions to set a password \(read it with: hoist mail list --to ann@example\.com\)\n$/,
  );
  const user = await cli.query((em) => em.findOneOrFail(User, { email: 'ann@example.com' }));
  assert.is(user.passwordHash, null);
  assert.is((await cli.query((em) => em.findOneOrFail(Account, { id: user.accountId }))).name, 'Ann');

  const mail = await cli.run(['mail', 'list', '--to', 'ann@example.com']);
  assert.is(mail.code, 0, mail.stderr);
  assert.match(mail.stdout, /^To: {6}ann@example\.com\nSubject: Your Hoist account is ready: choose a password\n/);
  assert.match(mail.stdout, /^Token: \S+$/m);

  const [approved, pending] = await Promise.all([
    cli.run(['access-requests', 'list', '--status', 'approved', '--json']),
    cli.run(['access-requests', 'list', '--status', 'pending', '--json']),
  ]);
  const [ann] = JSON.parse(approved.stdout);
  assert.is(ann.email, 'ann@example.com');
  assert.ok(Date.parse(ann.approved_at) >= Date.parse(ann.created_at));
  assert.equal(
    JSON.parse(pending.stdout).map((r: { email: string }) => r.email),
    ['bob@example.com'],
  );
});

test('approving twice, an unknown e-mail or a bad status is refused and writes nothing', async () => {
  const before = await stored();
  const [again, unknown, badStatus, noEmail] = await Promise.all([
    cli.run(['access-requests', 'approve', '--email', 'ann@example.com']),
    cli.run(['access-requests', 'approve', '--email', 'ghost@example.com']),
    cli.run(['access-requests', 'list', '--status', 'rejected']),
    cli.run(['access-requests', 'approve']),
  ]);
  assert.is(again.code, 1);
  assert.is(again.stderr, 'hoist: The access request for ann@example.com is already approved (conflict)\n');
  assert.is(unknown.code, 1);
  assert.is(unknown.stderr, 'hoist: Access request for ghost@example.com not found (not_found)\n');
  assert.is(badStatus.code, 2);
  assert.match(
    badStatus.stderr,
    /^error: option '--status <status>' argument 'rejected' is invalid\. Allowed choices are pending, approved\./,
  );
  assert.is(noEmail.code, 2);
  assert.match(noEmail.stderr, /^error: required option '--email <email>' not specified/);
  assert.equal(await stored(), before);
});

test.run();
