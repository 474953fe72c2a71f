// legs: db
// Members under concurrency (PostgreSQL, whose row locks let calls wait on each other; SQLite runs one write
// transaction at a time): an owner demoted while their call waits for the account's lock acts as a member when it
// runs, and two owners demoting each other at once leave one owner.
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { User } from '../../../core/entities/user.js';
import { testApi, type TestAccount, type TestApi } from '../../helpers/api.js';
import { testDb } from '../../helpers/kernel.js';
import { mailTo, tokenIn } from '../../helpers/mail.js';

const onPostgres = testDb === 'postgres' ? test : test.skip;

let t: TestApi;
test.before(async () => {
  t = await testApi({ mailMaxPerRecipient: 10, mailMaxPerAddress: 100 });
});
test.after(async () => t?.close());

let n = 0;
const address = () => `racer${++n}-${process.pid}@example.com`;
const call = (who: TestAccount | string, method: string, url: string, payload?: object) =>
  t.app.inject({
    method: method as 'GET',
    url: `/api/v1${url}`,
    headers: { authorization: `Bearer ${typeof who === 'string' ? who : who.token}` },
    ...(payload && { payload }),
  });
const rolesOf = async (accountId: string) =>
  (await t.inContext(() => t.kernel.orm.em.find(User, { accountId }, { orderBy: { createdAt: 'asc' } }))).map((u) => [
    u.id,
    u.role,
  ]);

/** Invites `email` into the owner's account as an owner; it chooses a password and logs in: its id and token. */
async function secondOwner(owner: TestAccount): Promise<{ id: string; token: string }> {
  const email = address();
  const res = await call(owner, 'POST', '/account/members', { email, role: 'owner' });
  assert.is(res.statusCode, 201, res.body);
  const [mail] = await mailTo(t, email);
  const password = 'the member password';
  await t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/password-recovery/reset',
    payload: { token: tokenIn(mail), password },
  });
  const login = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } });
  assert.is(login.statusCode, 200, login.body);
  return { id: res.json().id, token: login.json().token };
}

/**
 * Holds the account's row lock (as a member change does) while `request` starts and waits for it, then demotes
 * `userId` in that transaction and commits: another owner's demotion landing while the request was in flight.
 */
async function demotedInFlight<T>(accountId: string, userId: string, request: () => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: t.kernel.config.databaseUrl });
  await db.connect();
  try {
    await db.query('begin');
    await db.query('select id from accounts where id = $1 for update', [accountId]);
    const pending = request();
    const waiting =
      "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()";
    for (let i = 0; i < 500 && !(await db.query(waiting)).rows[0].n; i++) await sleep(10);
    await db.query("update users set role = 'member' where id = $1", [userId]);
    await db.query('commit');
    return await pending;
  } finally {
    await db.end();
  }
}

onPostgres('an owner demoted while the call waits acts as a member: 403, and nothing changes', async () => {
  const owner = await t.account({ plan: 'pro' });
  const other = await secondOwner(owner);
  const promoted = await demotedInFlight(owner.accountId, other.id, () =>
    call(other.token, 'PATCH', `/account/members/${other.id}`, { role: 'owner' }),
  );
  assert.is(promoted.statusCode, 403, promoted.body);
  assert.is(promoted.json().error.code, 'forbidden');
  assert.equal(await rolesOf(owner.accountId), [
    [owner.userId, 'owner'],
    [other.id, 'member'],
  ]);

  // The same for an invitation of a new owner and for the removal of a member.
  const third = await secondOwner(owner);
  const before = await rolesOf(owner.accountId);
  const invited = await demotedInFlight(owner.accountId, third.id, () =>
    call(third.token, 'POST', '/account/members', { email: address(), role: 'owner' }),
  );
  assert.is(invited.statusCode, 403, invited.body);
  const removed = await call(third.token, 'DELETE', `/account/members/${other.id}`);
  assert.is(removed.statusCode, 403, removed.body);
  assert.equal(
    await rolesOf(owner.accountId),
    before.map(([id, role]) => [id, id === third.id ? 'member' : role]),
  );
});

onPostgres('two owners demoting each other at once leave one owner', async () => {
  const owner = await t.account({ plan: 'pro' });
  const other = await secondOwner(owner);
  const answers = await Promise.all([
    call(owner, 'PATCH', `/account/members/${other.id}`, { role: 'member' }),
    call(other.token, 'PATCH', `/account/members/${owner.userId}`, { role: 'member' }),
  ]);
  assert.equal(answers.map((a) => a.statusCode).sort(), [200, 403], answers.map((a) => a.body).join('\n'));
  const roles = (await rolesOf(owner.accountId)).map(([, role]) => role);
  assert.equal(roles.sort(), ['member', 'owner']);
});

test.run();
