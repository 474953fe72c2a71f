// legs: db
import { createHash } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { OneTimeToken } from '../../../core/entities/one-time-token.js';
import { User } from '../../../core/entities/user.js';
import { testApi, type TestAccount, type TestApi } from '../../helpers/api.js';
import { mailTo, tokenIn } from '../../helpers/mail.js';

let t: TestApi;
test.before(async () => {
  t = await testApi();
});
test.after(async () => t?.close());

const em = () => t.kernel.orm.em;
const request = (a: TestAccount) =>
  t.app.inject({ method: 'POST', url: '/api/v1/auth/email-verification', headers: a.auth });
const confirm = (payload: unknown) =>
  t.app.inject({ method: 'POST', url: '/api/v1/auth/email-verification/confirm', payload: payload as object });
const verifiedAt = (a: TestAccount) =>
  t.inContext(async () => (await em().findOneOrFail(User, { id: a.userId })).emailVerifiedAt);
const invalidToken = (res: Awaited<ReturnType<typeof confirm>>) => {
  assert.is(res.statusCode, 400);
  assert.is(res.json().error.code, 'invalid_request');
  assert.is(res.json().error.details.field, 'token');
};

test('verification mails a one-time token, stored only as its SHA-256, that verifies the address once', async () => {
  const a = await t.account();
  const res = await request(a);
  assert.is(res.statusCode, 202);
  assert.equal(res.json(), { status: 'sent' });
  const mail = await mailTo(t, a.email);
  assert.is(mail.length, 1);
  const token = tokenIn(mail[0]);
  assert.match(mail[0].text, 'http://localhost:0/api/v1/auth/email-verification/confirm');
  const rows = await t.inContext(() => em().find(OneTimeToken, { userId: a.userId }));
  assert.is(rows.length, 1);
  assert.is(rows[0].purpose, 'verify_email');
  assert.is(rows[0].tokenHash, createHash('sha256').update(token).digest('hex'));
  const hours = (rows[0].expiresAt.getTime() - Date.now()) / 3600_000;
  assert.ok(hours > 23.9 && hours <= 24, `expires in ${hours} h`);

  assert.is(await verifiedAt(a), null);
  const ok = await confirm({ token });
  assert.is(ok.statusCode, 204);
  assert.ok(await verifiedAt(a));
  invalidToken(await confirm({ token }));

  const again = await request(a);
  assert.is(again.statusCode, 202);
  assert.equal(again.json(), { status: 'already_verified' });
  assert.is((await mailTo(t, a.email)).length, 1);
});

test('a user gets mailMaxPerRecipient verification mails a window; then 429 with Retry-After, no mail', async () => {
  const a = await t.account();
  const max = t.kernel.config.mailMaxPerRecipient;
  for (let i = 0; i < max; i++) assert.is((await request(a)).statusCode, 202, `request ${i + 1}`);
  const past = await request(a);
  assert.is(past.statusCode, 429);
  assert.is(past.json().error.code, 'rate_limited');
  assert.ok(Number(past.headers['retry-after']) > 0);
  assert.is((await mailTo(t, a.email)).length, max);
});

test('an unknown, expired or wrong-purpose token is 400 and verifies nobody', async () => {
  const a = await t.account();
  invalidToken(await confirm({ token: 'made-up-token' }));
  await request(a);
  const token = tokenIn((await mailTo(t, a.email))[0]);
  await t.inContext(() =>
    em().nativeUpdate(OneTimeToken, { userId: a.userId }, { expiresAt: new Date(Date.now() - 1000) }),
  );
  invalidToken(await confirm({ token }));
  await t.app.inject({ method: 'POST', url: '/api/v1/auth/password-recovery', payload: { email: a.email } });
  const reset = tokenIn((await mailTo(t, a.email))[1]);
  invalidToken(await confirm({ token: reset }));
  assert.is(await verifiedAt(a), null);
  const rows = await t.inContext(() => em().find(OneTimeToken, { userId: a.userId, usedAt: { $ne: null } }));
  assert.is(rows.length, 0);
});

test('bad bodies are 400 naming the field; requesting without a token is 401 and mails nothing', async () => {
  const missing = await confirm({});
  assert.is(missing.statusCode, 400);
  assert.is(missing.json().error.details.field, 'token');
  const extra = await confirm({ token: 'x', user: 'y' });
  assert.is(extra.statusCode, 400);
  assert.is(extra.json().error.details.field, 'user');
  const before = await t.inContext(() => em().count(OneTimeToken, {}));
  const anon = await t.app.inject({ method: 'POST', url: '/api/v1/auth/email-verification' });
  assert.is(anon.statusCode, 401);
  assert.is(anon.json().error.code, 'unauthorized');
  assert.is(await t.inContext(() => em().count(OneTimeToken, {})), before);
});

test.run();
