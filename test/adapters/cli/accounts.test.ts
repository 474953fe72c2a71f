// legs: db
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Account } from '../../../core/entities/account.js';
import { User } from '../../../core/entities/user.js';
import { PASSWORD_HASHER, type PasswordHasher } from '../../../core/ports/password-hasher.js';
import { hoistBin, root, testCli, type TestCli } from '../../helpers/cli.js';

let cli: TestCli;
test.before(async () => {
  cli = await testCli();
});
test.after(async () => cli?.close());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Every account and user as stored, to check what a command wrote (or did not). */
const stored = () =>
  cli.query(async (em) => ({
    accounts: (await em.find(Account, {}, { orderBy: { id: 'asc' } })).map((a) => `${a.id} ${a.name} ${a.plan}`),
    users: (await em.find(User, {}, { orderBy: { id: 'asc' } })).map(
      (u) => `${u.id} ${u.accountId} ${u.email} ${u.passwordHash}`,
    ),
  }));

/** True when the stored password of `email` is `password`. */
const verifies = async (email: string, password: string) => {
  const user = await cli.query((em) => em.findOneOrFail(User, { email }));
  return cli.kernel.get<PasswordHasher>(PASSWORD_HASHER).verify(user.passwordHash!, password);
};

test('accounts create reads the password piped on stdin and prints the ids', async () => {
  const res = await cli.run(
    ['accounts', 'create', '--email', 'Piped@Example.com', '--name', 'Piped Ltd', '--plan', 'pro', '--json'],
    'a-long-password',
  );
  assert.is(res.code, 0, res.stderr);
  const out = JSON.parse(res.stdout);
  assert.match(out.user.id, UUID);
  assert.equal(out.user, { id: out.user.id, email: 'piped@example.com' });
  assert.equal(out.account, { id: out.account.id, name: 'Piped Ltd', plan: 'pro' });
  const user = await cli.query((em) => em.findOneOrFail(User, { id: out.user.id }));
  assert.is(user.accountId, out.account.id);
  assert.ok(await verifies('piped@example.com', 'a-long-password'));

  const plain = await cli.run(['accounts', 'create', '--email', 'plain@example.com'], 'another-long-password\n');
  assert.is(plain.code, 0, plain.stderr);
  assert.match(
    plain.stdout,
    /^created user [0-9a-f-]{36} \(plain@example\.com\) in account [0-9a-f-]{36}, plan free\n$/,
  );
  assert.ok(await verifies('plain@example.com', 'another-long-password'));
});

test('accounts create reads --password-file, dropping one trailing newline', async () => {
  const file = join(cli.dataDir, 'pw.txt');
  writeFileSync(file, 'password-from-a-file\n');
  const res = await cli.run(['accounts', 'create', '--email', 'file@example.com', '--password-file', file, '--json']);
  assert.is(res.code, 0, res.stderr);
  assert.is(JSON.parse(res.stdout).user.email, 'file@example.com');
  assert.ok(await verifies('file@example.com', 'password-from-a-file'));
});

test('on a terminal, accounts create prompts twice and does not echo the password', async () => {
  // util-linux `script` runs the command on a pseudo-terminal.
  if (spawnSync('script', ['--version']).error) return console.log('! skip: no `script` command to open a terminal');
  const child = spawn(
    'script',
    ['-qec', `${process.execPath} ${hoistBin} accounts create --email tty@example.com`, '/dev/null'],
    { cwd: root, env: cli.env },
  );
  let screen = '';
  child.stdout.on('data', (d) => (screen += d));
  const waitFor = async (text: string) => {
    while (!screen.includes(text)) {
      if (child.exitCode !== null) throw new Error(`exited before asking ${text}:\n${screen}`);
      await sleep(20);
    }
  };
  const exited = once(child, 'close');
  await waitFor('Password: ');
  child.stdin.write('tty-password-1\r');
  await waitFor('Repeat password: ');
  child.stdin.write('tty-password-1\r');
  const [code] = await exited;
  assert.is(code, 0, screen);
  assert.match(screen, /created user [0-9a-f-]{36} \(tty@example\.com\)/);
  assert.not.match(screen, /tty-password/);
  assert.ok(await verifies('tty@example.com', 'tty-password-1'));
});

test('a password in argv is refused before anything is read or written', async () => {
  const before = await stored();
  const runs = [['--password', 'hunter2-hunter2'], ['--password=hunter2-hunter2'], ['--password']].map((args) =>
    cli.run(['accounts', 'create', '--email', 'argv@example.com', ...args], 'a-long-password'),
  );
  for (const res of await Promise.all(runs)) {
    assert.is(res.code, 2);
    assert.is(
      res.stderr,
      'hoist: --password is not accepted: a password on the command line ends up in ' +
        'shell history and the process list; pipe it on stdin or use --password-file ' +
        '<file> (invalid_request)\n',
    );
    assert.is(res.stdout, '');
  }
  assert.equal(await stored(), before);
});

test('bad input exits 2 with a message and writes nothing', async () => {
  const cases: [string[], string | undefined, RegExp][] = [
    [
      ['--email', 'not-an-email'],
      'a-long-password',
      /^hoist: Not a valid e-mail address: not-an-email \(invalid_request\)\n$/,
    ],
    [
      ['--email', 'short@example.com'],
      'short',
      /^hoist: Password must be at least 8 characters \(invalid_request\)\n$/,
    ],
    [
      ['--email', 'empty@example.com'],
      '',
      /^hoist: No password given: pipe it on stdin or use --password-file <file> \(invalid_request\)\n$/,
    ],
    [
      ['--email', 'plan@example.com', '--plan', 'gold'],
      'a-long-password',
      /^hoist: Unknown plan gold; known: free, pro, team \(invalid_request\)\n$/,
    ],
    [
      ['--email', 'nofile@example.com', '--password-file', '/nonexistent/pw'],
      undefined,
      /^hoist: Cannot read --password-file \/nonexistent\/pw: ENOENT/,
    ],
    [[], 'a-long-password', /^error: required option '--email <email>' not specified\n/],
  ];
  const before = await stored();
  const results = await Promise.all(cases.map(([args, input]) => cli.run(['accounts', 'create', ...args], input)));
  results.forEach((res, i) => {
    assert.is(res.code, 2, cases[i][0].join(' '));
    assert.match(res.stderr, cases[i][2]);
    assert.is(res.stdout, '');
  });
  assert.equal(await stored(), before);
});

test('a duplicate e-mail (any case) exits 1 with a conflict and keeps the first account', async () => {
  const first = await cli.run(
    ['accounts', 'create', '--email', 'dup@example.com', '--name', 'First'],
    'a-long-password',
  );
  assert.is(first.code, 0, first.stderr);
  const before = await stored();
  const res = await cli.run(
    ['accounts', 'create', '--email', 'DUP@example.com', '--name', 'Second'],
    'other-long-password',
  );
  assert.is(res.code, 1);
  assert.is(res.stderr, 'hoist: An account with e-mail dup@example.com already exists (conflict)\n');
  assert.equal(await stored(), before);
});

test('accounts list prints a table, and --json the same accounts', async () => {
  const [table, json] = await Promise.all([cli.run(['accounts', 'list']), cli.run(['accounts', 'list', '--json'])]);
  assert.is(table.code, 0, table.stderr);
  const [header, ...rows] = table.stdout.trimEnd().split('\n');
  assert.match(header, /^ID\s+PLAN\s+CREATED\s+NAME\s+E-MAIL$/);
  assert.ok(
    rows.some((r) => /^[0-9a-f-]{36} {2}pro {3}\S+Z {2}Piped Ltd\s+piped@example\.com$/.test(r)),
    table.stdout,
  );
  const list = JSON.parse(json.stdout) as {
    id: string;
    name: string;
    plan: string;
    emails: string[];
    created_at: string;
  }[];
  assert.is(rows.length, list.length);
  assert.is(list.length, (await stored()).accounts.length);
  assert.equal(
    list.map((a) => a.emails[0]),
    ['piped@example.com', 'plain@example.com', 'file@example.com', 'tty@example.com', 'dup@example.com'],
  );
  assert.ok(list.every((a) => !Number.isNaN(Date.parse(a.created_at))));
});

test('accounts set-plan moves the account; an unknown plan or e-mail changes nothing', async () => {
  const ok = await cli.run(['accounts', 'set-plan', '--email', 'PLAIN@example.com', '--plan', 'team']);
  assert.is(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /^account [0-9a-f-]{36} \(PLAIN@example\.com\) is now on plan team\n$/);
  const user = await cli.query((em) => em.findOneOrFail(User, { email: 'plain@example.com' }));
  assert.is((await cli.query((em) => em.findOneOrFail(Account, { id: user.accountId }))).plan, 'team');

  const before = await stored();
  const [unknownPlan, unknownUser, missing] = await Promise.all([
    cli.run(['accounts', 'set-plan', '--email', 'plain@example.com', '--plan', 'gold']),
    cli.run(['accounts', 'set-plan', '--email', 'ghost@example.com', '--plan', 'pro']),
    cli.run(['accounts', 'set-plan', '--email', 'plain@example.com']),
  ]);
  assert.is(unknownPlan.code, 2);
  assert.is(unknownPlan.stderr, 'hoist: Unknown plan gold; known: free, pro, team (invalid_request)\n');
  assert.is(unknownUser.code, 1);
  assert.is(unknownUser.stderr, 'hoist: Account for ghost@example.com not found (not_found)\n');
  assert.is(missing.code, 2);
  assert.match(missing.stderr, /^error: required option '--plan <plan>' not specified\n/);
  assert.equal(await stored(), before);
});

test.run();
