// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  ACCESS_REQUEST_SERVICE,
  type AccessRequestService,
} from '../../../core/access-requests/access-request-service.js';
import { AccessRequest } from '../../../core/entities/access-request.js';
import { OneTimeToken } from '../../../core/entities/one-time-token.js';
import { User } from '../../../core/entities/user.js';
import { testApi, type TestApi } from '../../helpers/api.js';
import { mailTo, tokenIn } from '../../helpers/mail.js';

let t: TestApi;
let service: AccessRequestService;
test.before(async () => {
  t = await testApi();
  service = t.kernel.get<AccessRequestService>(ACCESS_REQUEST_SERVICE);
});
test.after(async () => t?.close());

const em = () => t.kernel.orm.em;
const submit = (payload: unknown) =>
  t.app.inject({ method: 'POST', url: '/api/v1/access-requests', payload: payload as object });
const rows = () => t.inContext(() => em().find(AccessRequest, {}, { orderBy: { createdAt: 'asc' } }));
const failure = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: { code: string }) => e.code,
  );

test('bad input is 400 naming the field and stores nothing', async () => {
  const cases: [unknown, string][] = [
    [{}, 'email'],
    [{ email: 'not-an-email' }, 'email'],
    [{ email: 'two@at@example.com' }, 'email'],
    [{ email: 'spa ce@example.com' }, 'email'],
    // Address syntax to a mailer: one mailbox (ok@example.com, root) under another name.
    [{ email: 'ok@example.com,' }, 'email'],
    [{ email: '<ok@example.com>' }, 'email'],
    [{ email: 'x,ok@example.com' }, 'email'],
    [{ email: 'x@example.com<root>' }, 'email'],
    [{ email: 42 }, 'email'],
    [{ email: `${'x'.repeat(320)}@example.com` }, 'email'],
    [{ email: 'ok@example.com', name: 'n'.repeat(201) }, 'name'],
    [{ email: 'ok@example.com', message: 'm'.repeat(2001) }, 'message'],
    [{ email: 'ok@example.com', admin: true }, 'admin'],
  ];
  for (const [payload, field] of cases) {
    const res = await submit(payload);
    assert.is(res.statusCode, 400, JSON.stringify(payload));
    assert.is(res.json().error.code, 'invalid_request');
    assert.is(res.json().error.details.field, field, JSON.stringify(payload));
  }
  assert.is((await rows()).length, 0);
});

test('a request is stored once: a repeat answers the same and adds no row', async () => {
  const first = await submit({ email: 'Ada@Example.com ', name: 'Ada', message: 'For my thesis site' });
  assert.is(first.statusCode, 202);
  assert.equal(first.json(), { status: 'received' });
  const again = await submit({ email: 'ada@example.com', name: 'Someone else' });
  assert.is(again.statusCode, 202);
  assert.equal(again.json(), first.json());
  const list = await rows();
  assert.is(list.length, 1);
  assert.equal(
    [list[0].email, list[0].name, list[0].message, list[0].status, list[0].approvedAt],
    ['ada@example.com', 'Ada', 'For my thesis site', 'pending', null],
  );
});

test('an e-mail that already has an account answers the same and stores nothing', async () => {
  const a = await t.account();
  const res = await submit({ email: a.email });
  assert.is(res.statusCode, 202);
  assert.equal(res.json(), { status: 'received' });
  assert.is((await rows()).filter((r) => r.email === a.email).length, 0);
});

test(
  'approve creates the account, mails a set-password token that goes through reset, ' + 'and then login works',
  async () => {
    const email = 'grace@example.com';
    await submit({ email, name: 'Grace' });
    assert.equal((await t.inContext(() => service.list('pending'))).map((r) => r.email).includes(email), true);
    const { account, user } = await t.inContext(() => service.approve(email.toUpperCase()));
    assert.is(user.email, email);
    assert.is(user.accountId, account.id);
    assert.is(account.name, 'Grace');
    assert.is(user.passwordHash, null);
    const request = (await rows()).find((r) => r.email === email)!;
    assert.is(request.status, 'approved');
    assert.ok(request.approvedAt);
    assert.equal(
      (await t.inContext(() => service.list('approved'))).map((r) => r.email),
      [email],
    );

    const mail = await mailTo(t, email);
    assert.is(mail.length, 1);
    assert.match(mail[0].text, '/api/v1/auth/password-recovery/reset');
    const token = tokenIn(mail[0]);
    const row = await t.inContext(() => em().findOneOrFail(OneTimeToken, { userId: user.id }));
    assert.is(row.purpose, 'reset_password');
    const days = (row.expiresAt.getTime() - Date.now()) / 86400_000;
    assert.ok(days > 6.99 && days <= 7, `expires in ${days} days`);

    assert.is(
      (
        await t.app.inject({
          method: 'POST',
          url: '/api/v1/auth/login',
          payload: { email, password: 'grace hopper 1906' },
        })
      ).statusCode,
      401,
    );
    const set = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/password-recovery/reset',
      payload: { token, password: 'grace hopper 1906' },
    });
    assert.is(set.statusCode, 204);
    const login = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email, password: 'grace hopper 1906' },
    });
    assert.is(login.statusCode, 200);
    assert.equal(login.json().user, { id: user.id, email });
  },
);

test('approve refuses an unknown or already approved request and creates nothing more', async () => {
  const users = await t.inContext(() => em().count(User, {}));
  assert.is(await failure(t.inContext(() => service.approve('nobody@example.com'))), 'not_found');
  assert.is(await failure(t.inContext(() => service.approve('grace@example.com'))), 'conflict');
  assert.is(await t.inContext(() => em().count(User, {})), users);
  assert.is((await mailTo(t, 'grace@example.com')).length, 1);
});

test('list takes no status, pending or approved, and refuses others', async () => {
  const all = await t.inContext(() => service.list());
  assert.equal(
    all.map((r) => r.email),
    ['ada@example.com', 'grace@example.com'],
  );
  assert.is(await failure(t.inContext(() => service.list('rejected'))), 'invalid_request');
});

test.run();
