// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { buildApi } from '../../../adapters/http/app.js';
import { boot } from '../../../adapters/kernel.js';
import { createLogger } from '../../../adapters/logger.js';
import { ACCOUNT_SERVICE, type AccountService } from '../../../core/accounts/account-service.js';
import { testApi, type TestApi } from '../../helpers/api.js';

let t: TestApi;
test.before(async () => {
  t = await testApi({ loginMaxPerAccount: 3, loginMaxPerAddress: 6, loginWindowSeconds: 600 });
});
test.after(async () => t?.close());

const password = 'correct horse battery';
let n = 0;
// Accounts are made directly so no login from the default address counts against its limit.
const user = async () => {
  const email = `rl${++n}-${process.pid}@example.com`;
  await t.inContext(() => t.kernel.get<AccountService>(ACCOUNT_SERVICE).create({ email, password }));
  return email;
};
const login = (email: string, pw: string, address: string, app = t.app) =>
  app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password: pw }, remoteAddress: address });
const limited = (res: Awaited<ReturnType<typeof login>>) => {
  assert.is(res.statusCode, 429);
  const body = res.json();
  assert.is(body.error.code, 'rate_limited');
  const retry = Number(res.headers['retry-after']);
  assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 600, `Retry-After ${res.headers['retry-after']}`);
  assert.is(body.error.details.retry_after, retry);
};

test('past loginMaxPerAccount failures the account gets 429 with Retry-After, even with the right password', async () => {
  const email = await user();
  for (let i = 0; i < 3; i++) assert.is((await login(email, 'wrong password', `10.0.1.${i}`)).statusCode, 401);
  limited(await login(email, password, '10.0.1.9'));
  limited(await login(email.toUpperCase(), 'wrong password', '10.0.1.10'));
  // Other accounts from the same addresses are not affected.
  assert.is((await login(await user(), password, '10.0.1.9')).statusCode, 200);
});

test('an unknown e-mail is limited exactly like a known one', async () => {
  const ghost = `ghost-${process.pid}@example.com`;
  for (let i = 0; i < 3; i++) assert.is((await login(ghost, 'wrong password', `10.0.2.${i}`)).statusCode, 401);
  limited(await login(ghost, 'wrong password', '10.0.2.9'));
});

test('a successful login clears the failures of the account', async () => {
  const email = await user();
  for (let i = 0; i < 2; i++) assert.is((await login(email, 'wrong password', `10.0.3.${i}`)).statusCode, 401);
  assert.is((await login(email, password, '10.0.3.5')).statusCode, 200);
  for (let i = 0; i < 3; i++) assert.is((await login(email, 'wrong password', `10.0.3.${10 + i}`)).statusCode, 401);
  limited(await login(email, password, '10.0.3.20'));
});

test('past loginMaxPerAddress attempts (good or bad) the address gets 429; other addresses are not affected', async () => {
  const a = await user();
  const b = await user();
  assert.is((await login(a, password, '10.0.4.1')).statusCode, 200);
  assert.is((await login(b, password, '10.0.4.1')).statusCode, 200);
  for (const email of [a, b, a, b]) assert.is((await login(email, 'wrong password', '10.0.4.1')).statusCode, 401);
  limited(await login(await user(), password, '10.0.4.1'));
  assert.is((await login(a, password, '10.0.4.2')).statusCode, 200);
});

test('API processes sharing the database share the counters', async () => {
  const second = await boot(t.kernel.config, { log: createLogger('silent') });
  const app2 = await buildApi(second);
  try {
    const email = await user();
    assert.is((await login(email, 'wrong password', '10.0.5.1')).statusCode, 401);
    assert.is((await login(email, 'wrong password', '10.0.5.2', app2)).statusCode, 401);
    assert.is((await login(email, 'wrong password', '10.0.5.3')).statusCode, 401);
    limited(await login(email, password, '10.0.5.4', app2));
    for (let i = 0; i < 3; i++) await login(`x${i}@example.com`, 'wrong password', '10.0.5.100', i % 2 ? app2 : t.app);
    for (let i = 0; i < 3; i++) await login(`y${i}@example.com`, 'wrong password', '10.0.5.100', i % 2 ? t.app : app2);
    limited(await login(await user(), password, '10.0.5.100', app2));
  } finally {
    await app2.close();
    await second.stop();
  }
});

test.run();
