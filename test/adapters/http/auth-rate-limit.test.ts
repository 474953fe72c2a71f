// legs: db
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { buildApi } from '../../../adapters/http/app.js';
import { boot } from '../../../adapters/kernel.js';
import { createLogger } from '../../../adapters/logger.js';
import { ACCOUNT_SERVICE, type AccountService } from '../../../core/accounts/account-service.js';
import { LOGIN_SLOWDOWN_STEP_MS } from '../../../core/auth/auth-service.js';
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
const limited = (res: Awaited<ReturnType<typeof login>>, window = 600) => {
  assert.is(res.statusCode, 429, res.body);
  const body = res.json();
  assert.is(body.error.code, 'rate_limited');
  const retry = Number(res.headers['retry-after']);
  assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= window, `Retry-After ${res.headers['retry-after']}`);
  assert.is(body.error.details.retry_after, retry);
};
const timed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
  const started = performance.now();
  const out = await fn();
  return [out, performance.now() - started];
};

test(
  "wrong passwords for someone else's e-mail lock only the guessing address out; " + 'the owner logs in from theirs',
  async () => {
    const email = await user();
    for (let i = 0; i < 3; i++) assert.is((await login(email, 'wrong password', '10.0.1.66')).statusCode, 401);
    // The guessing address: 429, even with the right password, even in another case.
    limited(await login(email, password, '10.0.1.66'));
    limited(await login(email.toUpperCase(), 'wrong password', '10.0.1.66'));
    // The owner, from another address: in at once.
    const [res, ms] = await timed(() => login(email, password, '10.0.1.7'));
    assert.is(res.statusCode, 200, res.body);
    assert.ok(ms < LOGIN_SLOWDOWN_STEP_MS * 4, `${Math.round(ms)} ms`);
    // Other accounts from the guessing address are not affected.
    assert.is((await login(await user(), password, '10.0.1.66')).statusCode, 200);
  },
);

test(
  'guesses from many addresses slow the account down but never lock the owner out; ' +
    'not at all from an address they logged in from',
  async () => {
    const email = await user();
    // The owner has logged in from 10.0.2.1 before.
    assert.is((await login(email, password, '10.0.2.1')).statusCode, 200);
    // 7 failures spread over addresses, each under the per-address limit: 4 past loginMaxPerAccount.
    for (let i = 0; i < 7; i++)
      assert.is((await login(email, 'wrong password', `10.0.2.${100 + Math.floor(i / 2)}`)).statusCode, 401);
    const [fresh, freshMs] = await timed(() => login(email, password, '10.0.2.50'));
    assert.is(fresh.statusCode, 200, 'the right password from a clean address gets in');
    assert.ok(freshMs >= 4 * LOGIN_SLOWDOWN_STEP_MS, `slowed down: ${Math.round(freshMs)} ms`);
    const [known, knownMs] = await timed(() => login(email, password, '10.0.2.1'));
    assert.is(known.statusCode, 200);
    assert.ok(knownMs < 4 * LOGIN_SLOWDOWN_STEP_MS, `not slowed from a known address: ${Math.round(knownMs)} ms`);
  },
);

test('an unknown e-mail is limited exactly like a known one', async () => {
  const ghost = `ghost-${process.pid}@example.com`;
  for (let i = 0; i < 3; i++) assert.is((await login(ghost, 'wrong password', '10.0.3.1')).statusCode, 401);
  limited(await login(ghost, 'wrong password', '10.0.3.1'));
  assert.is((await login(ghost, 'wrong password', '10.0.3.2')).statusCode, 401);
});

test('a successful login clears the failures of the account from that address', async () => {
  const email = await user();
  for (let i = 0; i < 2; i++) assert.is((await login(email, 'wrong password', '10.0.4.1')).statusCode, 401);
  assert.is((await login(email, password, '10.0.4.1')).statusCode, 200);
  for (let i = 0; i < 2; i++) assert.is((await login(email, 'wrong password', '10.0.4.1')).statusCode, 401);
  assert.is((await login(email, password, '10.0.4.1')).statusCode, 200);
});

test(
  'past loginMaxPerAddress attempts (good or bad) the address gets 429; other ' + 'addresses are not affected',
  async () => {
    const a = await user();
    const b = await user();
    assert.is((await login(a, password, '10.0.5.1')).statusCode, 200);
    assert.is((await login(b, password, '10.0.5.1')).statusCode, 200);
    for (const email of [a, b, a, b]) assert.is((await login(email, 'wrong password', '10.0.5.1')).statusCode, 401);
    limited(await login(await user(), password, '10.0.5.1'));
    assert.is((await login(a, password, '10.0.5.2')).statusCode, 200);
  },
);

test('windows slide: a burst across the edge of a clock-aligned window gets the limit, not twice it', async () => {
  const s = await testApi({ loginMaxPerAccount: 10, loginMaxPerAddress: 4, loginWindowSeconds: 4 });
  try {
    // Just before a multiple of 4 s, where a fixed window would end.
    while (Date.now() % 4000 < 2800 || Date.now() % 4000 > 3000) await sleep(20);
    for (let i = 0; i < 4; i++)
      assert.is((await login(`edge${i}@example.com`, 'wrong password', '10.0.6.1', s.app)).statusCode, 401);
    while (Date.now() % 4000 > 3500) await sleep(20);
    await sleep(200);
    // A fixed window would have started over here.
    limited(await login('edge9@example.com', 'wrong password', '10.0.6.1', s.app), 4);
  } finally {
    await s.close();
  }
});

test('API processes sharing the database share the counters', async () => {
  const second = await boot(t.kernel.config, { log: createLogger('silent') });
  const app2 = await buildApi(second);
  try {
    const email = await user();
    assert.is((await login(email, 'wrong password', '10.0.7.1')).statusCode, 401);
    assert.is((await login(email, 'wrong password', '10.0.7.1', app2)).statusCode, 401);
    assert.is((await login(email, 'wrong password', '10.0.7.1')).statusCode, 401);
    limited(await login(email, password, '10.0.7.1', app2));
    for (let i = 0; i < 3; i++) await login(`x${i}@example.com`, 'wrong password', '10.0.7.100', i % 2 ? app2 : t.app);
    for (let i = 0; i < 3; i++) await login(`y${i}@example.com`, 'wrong password', '10.0.7.100', i % 2 ? t.app : app2);
    limited(await login(await user(), password, '10.0.7.100', app2));
  } finally {
    await app2.close();
    await second.stop();
  }
});

test('the addresses of one IPv6 /64 count as one client: rotating them does not reset the limits', async () => {
  for (let i = 1; i <= 6; i++)
    assert.is((await login(await user(), 'wrong password', `2001:db8:77:1::${i}`)).statusCode, 401, `address ${i}`);
  limited(await login(await user(), password, '2001:db8:77:1:ffff::99'));
  const email = await user();
  for (let i = 1; i <= 3; i++) assert.is((await login(email, 'wrong', `2001:db8:77:2::${i}`)).statusCode, 401);
  limited(await login(email, password, '2001:db8:77:2::aa'));
  assert.is((await login(email, password, '2001:db8:77:3::1')).statusCode, 200, 'another /64 is another client');
});

test.run();
