// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Account } from '../../../core/entities/account.js';
import { User } from '../../../core/entities/user.js';
import { ACCOUNT_SERVICE, type AccountService } from '../../../core/accounts/account-service.js';
import { testApi, type TestAccount, type TestApi } from '../../helpers/api.js';
import { mailTo, tokenIn } from '../../helpers/mail.js';

let t: TestApi;
test.before(async () => {
  // Answers kept for an hour: what the tests see change was dropped by its write, not expired.
  t = await testApi({ answerCacheSeconds: 3600 });
});
test.after(async () => t?.close());

test('GET /me answers the user and the account', async () => {
  const a = await t.account({ plan: 'team' });
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/me', headers: a.auth });
  assert.is(res.statusCode, 200);
  const body = res.json();
  assert.equal(body.user, { id: a.userId, email: a.email, email_verified: false, role: 'owner' });
  const { created_at, ...account } = body.account;
  assert.equal(account, {
    id: a.accountId,
    name: a.email,
    plan: 'team',
    billing_category: 'individual',
    subscription_status: 'active',
  });
  const stored = await t.inContext(() => t.kernel.orm.em.findOneOrFail(Account, { id: a.accountId }));
  assert.is(created_at, stored.createdAt.toISOString(), 'the stored creation time, to the millisecond');
});

test('a token whose user is gone gets 401 from GET /me', async () => {
  const a = await t.account();
  await t.inContext(() => t.kernel.orm.em.nativeDelete(User, { id: a.userId }));
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/me', headers: a.auth });
  assert.is(res.statusCode, 401);
  assert.is(res.json().error.code, 'unauthorized');
});

test('email_verified follows the user record', async () => {
  const a = await t.account();
  await t.kernel.orm.em.fork().nativeUpdate(User, { id: a.userId }, { emailVerifiedAt: new Date() });
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/me', headers: a.auth });
  assert.is(res.json().user.email_verified, true);
});

test('PATCH /me renames the account and answers like GET /me', async () => {
  const a = await t.account();
  const res = await t.app.inject({
    method: 'PATCH',
    url: '/api/v1/me',
    headers: a.auth,
    payload: { name: '  Acme Studio ' },
  });
  assert.is(res.statusCode, 200, res.body);
  assert.is(res.json().account.name, 'Acme Studio');
  const again = await t.app.inject({ method: 'GET', url: '/api/v1/me', headers: a.auth });
  assert.equal(again.json(), res.json());
});

test('a bad rename is 400 naming the field and changes nothing', async () => {
  const a = await t.account();
  for (const [payload, field] of [
    [{}, 'name'],
    [{ name: '' }, 'name'],
    [{ name: '   ' }, 'name'],
    [{ name: 'x'.repeat(201) }, 'name'],
    [{ name: 'ok', plan: 'team' }, 'plan'],
  ] as const) {
    const res = await t.app.inject({ method: 'PATCH', url: '/api/v1/me', headers: a.auth, payload });
    assert.is(res.statusCode, 400, JSON.stringify(payload));
    assert.is(res.json().error.code, 'invalid_request');
    assert.is(res.json().error.details.field, field);
  }
  const account = await t.kernel.orm.em.fork().findOneOrFail(Account, { id: a.accountId });
  assert.equal([account.name, account.plan], [a.email, 'free']);
});

const me = async (a: TestAccount) => {
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/me', headers: a.auth });
  assert.is(res.statusCode, 200, res.body);
  return res.json();
};

test("GET /me is kept: a write behind Hoist's back is not seen, each write Hoist announces is, at once", async () => {
  const a = await t.account();
  const name = (await me(a)).account.name;
  await t.kernel.orm.em.fork().nativeUpdate(Account, { id: a.accountId }, { name: 'behind its back' });
  assert.is((await me(a)).account.name, name, 'the kept answer');

  const renamed = await t.app.inject({ method: 'PATCH', url: '/api/v1/me', headers: a.auth, payload: { name: 'New' } });
  assert.is(renamed.statusCode, 200);
  assert.is((await me(a)).account.name, 'New');

  await t.inContext(() => t.kernel.get<AccountService>(ACCOUNT_SERVICE).setPlan(a.email, 'team'));
  assert.is((await me(a)).account.plan, 'team', 'the plan change (hoist accounts set-plan)');

  await t.app.inject({ method: 'POST', url: '/api/v1/auth/email-verification', headers: a.auth });
  const token = tokenIn((await mailTo(t, a.email))[0]);
  const confirmed = await t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/email-verification/confirm',
    payload: { token },
  });
  assert.is(confirmed.statusCode, 204);
  assert.is((await me(a)).user.email_verified, true, 'the verified address');
});

test('a password reset verifies the address: the next login sees it in GET /me', async () => {
  const a = await t.account();
  assert.is((await me(a)).user.email_verified, false);
  await t.app.inject({ method: 'POST', url: '/api/v1/auth/password-recovery', payload: { email: a.email } });
  const token = tokenIn((await mailTo(t, a.email))[0]);
  const reset = await t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/password-recovery/reset',
    payload: { token, password: 'another good password' },
  });
  assert.is(reset.statusCode, 204, reset.body);
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/me', headers: a.auth });
  assert.is(res.statusCode, 401, 'the old session is revoked');
  const login = await t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    payload: { email: a.email, password: 'another good password' },
  });
  const again = { ...a, auth: { authorization: `Bearer ${login.json().token}` } };
  assert.is((await me(again)).user.email_verified, true);
});

test('/me needs a bearer token', async () => {
  for (const method of ['GET', 'PATCH'] as const) {
    const res = await t.app.inject({
      method,
      url: '/api/v1/me',
      payload: method === 'PATCH' ? { name: 'x' } : undefined,
    });
    assert.is(res.statusCode, 401);
    assert.is(res.json().error.code, 'unauthorized');
  }
});

test.run();
