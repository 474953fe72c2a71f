// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Account } from '../../../core/entities/account.js';
import { User } from '../../../core/entities/user.js';
import { testApi, type TestApi } from '../../helpers/api.js';

let t: TestApi;
test.before(async () => {
  t = await testApi();
});
test.after(async () => t?.close());

test('GET /me answers the user and the account', async () => {
  const a = await t.account({ plan: 'team' });
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/me', headers: a.auth });
  assert.is(res.statusCode, 200);
  const body = res.json();
  assert.equal(body.user, { id: a.userId, email: a.email, email_verified: false });
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
