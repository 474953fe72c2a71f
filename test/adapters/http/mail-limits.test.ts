// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AccessRequest } from '../../../core/entities/access-request.js';
import { OneTimeToken } from '../../../core/entities/one-time-token.js';
import { testApi, type TestApi } from '../../helpers/api.js';
import { mailTo } from '../../helpers/mail.js';

// Defaults: 3 mails to one e-mail and 10 requests from one client address per hour.
let t: TestApi;
test.before(async () => {
  t = await testApi();
});
test.after(async () => t?.close());

const recover = (email: string, address: string) =>
  t.app.inject({ method: 'POST', url: '/api/v1/auth/password-recovery', payload: { email }, remoteAddress: address });
const ask = (email: string, address: string) =>
  t.app.inject({ method: 'POST', url: '/api/v1/access-requests', payload: { email }, remoteAddress: address });
const statuses = async (n: number, send: (i: number) => Promise<{ statusCode: number }>) => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await send(i)).statusCode);
  return out;
};
const limited = (res: { statusCode: number; headers: Record<string, unknown>; json(): any }) => {
  assert.is(res.statusCode, 429);
  assert.is(res.json().error.code, 'rate_limited');
  const retry = Number(res.headers['retry-after']);
  assert.ok(retry >= 1 && retry <= 3600, `Retry-After ${retry}`);
};

test(
  '15 recovery requests for one e-mail in a row, from one address: 3 mails, then ' +
    '202 and nothing, then 429 for that address',
  async () => {
    const a = await t.account();
    const answers = await statuses(15, () => recover(a.email, '10.1.0.1'));
    assert.equal(answers, [...Array(10).fill(202), ...Array(5).fill(429)]);
    assert.is((await mailTo(t, a.email)).length, 3);
    assert.is(await t.kernel.orm.em.fork().count(OneTimeToken, { userId: a.userId }), 3);
    limited(await recover(a.email, '10.1.0.1'));
  },
);

test('recovery requests from the addresses of one IPv6 /64 share its allowance', async () => {
  const answers = [];
  for (let i = 1; i <= 11; i++) answers.push((await recover(`v6-${i}@example.com`, `2001:db8:88:1::${i}`)).statusCode);
  assert.equal(answers, [...Array(10).fill(202), 429]);
  assert.is((await recover('v6-x@example.com', '2001:db8:88:2::1')).statusCode, 202, 'another /64');
});

test('15 recovery requests for one e-mail from 15 addresses: every answer 202, still 3 mails', async () => {
  const a = await t.account();
  const answers = await statuses(15, (i) => recover(a.email.toUpperCase(), `10.1.1.${i}`));
  assert.equal(answers, Array(15).fill(202));
  assert.is((await mailTo(t, a.email)).length, 3);
});

test('an unknown e-mail gets exactly the answers a known one gets', async () => {
  const a = await t.account();
  const ghost = `ghost-${process.pid}@example.com`;
  const known = await statuses(12, (i) => recover(a.email, `10.1.2.${i % 2}`));
  const unknown = await statuses(12, (i) => recover(ghost, `10.1.3.${i % 2}`));
  assert.equal(unknown, known);
  assert.is((await mailTo(t, ghost)).length, 0);
});

test(
  'one address cannot flood other mailboxes either: past 10 requests it gets 429 ' + 'and nothing more is mailed',
  async () => {
    const people = await Promise.all(Array.from({ length: 12 }, () => t.account()));
    const answers = await statuses(12, (i) => recover(people[i].email, '10.1.4.1'));
    assert.equal(answers, [...Array(10).fill(202), 429, 429]);
    for (const [i, p] of people.entries()) assert.is((await mailTo(t, p.email)).length, i < 10 ? 1 : 0, p.email);
    // Another address still gets a mail out.
    assert.is((await recover(people[11].email, '10.1.4.2')).statusCode, 202);
    assert.is((await mailTo(t, people[11].email)).length, 1);
  },
);

test('access requests: 10 per client address, then 429 and nothing stored; one e-mail is recorded once', async () => {
  const answers = await statuses(12, (i) => ask(`asker${i}-${process.pid}@example.com`, '10.1.5.1'));
  assert.equal(answers, [...Array(10).fill(202), 429, 429]);
  const em = t.kernel.orm.em.fork();
  assert.is(await em.count(AccessRequest, { email: { $like: `asker%-${process.pid}@example.com` } }), 10);
  assert.is(await em.count(AccessRequest, { email: `asker11-${process.pid}@example.com` }), 0);
  // For one e-mail from many addresses: all answered alike, one request kept.
  const same = await statuses(6, (i) => ask(`same-${process.pid}@example.com`, `10.1.6.${i}`));
  assert.equal(same, Array(6).fill(202));
  assert.is(await em.count(AccessRequest, { email: `same-${process.pid}@example.com` }), 1);
});

test.run();
