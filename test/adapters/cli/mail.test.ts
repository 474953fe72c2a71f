// legs: db
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAILER, type Mailer } from '../../../core/ports/mailer.js';
import { testCli, type TestCli } from '../../helpers/cli.js';

let cli: TestCli;
test.before(async () => {
  cli = await testCli();
});
test.after(async () => cli?.close());

test('mail list on an empty outbox says so', async () => {
  const [plain, json] = await Promise.all([cli.run(['mail', 'list']), cli.run(['mail', 'list', '--json'])]);
  assert.is(plain.code, 0, plain.stderr);
  assert.is(plain.stdout, 'no mail\n');
  assert.is(json.stdout, '[]\n');
});

test('mail list shows to, subject, date and text, newest first, and filters by --to', async () => {
  const mailer = cli.kernel.get<Mailer>(MAILER);
  await mailer.send({
    to: 'ann@example.com',
    subject: 'First',
    text: 'Set your password: http://localhost:3000/set-password?token=one\n',
  });
  await sleep(20);
  await mailer.send({ to: 'bob@example.com', subject: 'Second', text: 'Hello Bob' });
  await sleep(20);
  await mailer.send({ to: 'ann@example.com', subject: 'Third', text: 'Hello again' });

  const json = await cli.run(['mail', 'list', '--json']);
  assert.is(json.code, 0, json.stderr);
  const all = JSON.parse(json.stdout) as {
    id: string;
    to: string;
    subject: string;
    created_at: string;
    text: string;
  }[];
  assert.equal(
    all.map((m) => [m.to, m.subject]),
    [
      ['ann@example.com', 'Third'],
      ['bob@example.com', 'Second'],
      ['ann@example.com', 'First'],
    ],
  );
  assert.is(all[2].text, 'Set your password: http://localhost:3000/set-password?token=one\n');
  assert.ok(Date.parse(all[0].created_at) > Date.parse(all[2].created_at));

  const plain = await cli.run(['mail', 'list', '--to', 'ANN@example.com']);
  assert.is(plain.code, 0, plain.stderr);
  const [third, first, ...rest] = plain.stdout.split(`${'-'.repeat(72)}\n`);
  assert.is(rest.length, 0);
  assert.is(third, `To:      ann@example.com\nSubject: Third\nDate:    ${all[0].created_at}\n\nHello again\n`);
  assert.is(
    first,
    `To:      ann@example.com\nSubject: First\nDate:    ${all[2].created_at}\n\nSet ` +
      `your password: http://localhost:3000/set-password?token=one\n\n`,
  );
});

test('mail list --to with no value is a usage error (exit 2)', async () => {
  const res = await cli.run(['mail', 'list', '--to']);
  assert.is(res.code, 2);
  assert.match(res.stderr, /^error: option '--to <email>' argument missing/);
});

test.run();
