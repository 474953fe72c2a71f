// The API's request limit: per account (every token of it), per client address without a token, answered 429
// rate_limited with Retry-After before the handler runs; the health routes are not counted; 0 turns it off.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Project } from '../../../core/entities/project.js';
import { testApi, type TestAccount, type TestApi } from '../../helpers/api.js';

const LIMIT = 5;
let t: TestApi;
test.before(async () => {
  t = await testApi({ apiRequestsPerMinute: LIMIT });
});
test.after(async () => t?.close());

let n = 0;
/** An account logged in from an address of its own (logins without a token are counted per address too). */
const account = () => t.account({ address: `198.51.100.${++n}` });
const get = (who: TestAccount | null, url: string) =>
  t.app.inject({ method: 'GET', url, headers: who ? who.auth : {} });

test('an account gets its limit a minute, told on each answer; past it 429 with Retry-After; others on', async () => {
  const [a, b] = [await account(), await account()];
  for (let i = 1; i <= LIMIT; i++) {
    const res = await get(a, '/api/v1/me');
    assert.is(res.statusCode, 200, res.body);
    assert.is(res.headers['x-ratelimit-limit'], String(LIMIT));
    assert.is(res.headers['x-ratelimit-remaining'], String(LIMIT - i));
    assert.ok(Number(res.headers['x-ratelimit-reset']) > 0);
  }
  const refused = await get(a, '/api/v1/me');
  assert.is(refused.statusCode, 429, refused.body);
  const { error } = refused.json();
  assert.is(error.code, 'rate_limited');
  assert.match(error.message, `${LIMIT} a minute are allowed for this account`);
  assert.equal([error.details.limit, error.details.window_seconds], [LIMIT, 60]);
  assert.ok(error.details.retry_after >= 1 && error.details.retry_after <= 60, JSON.stringify(error));
  assert.is(refused.headers['retry-after'], String(error.details.retry_after));
  assert.ok(refused.headers['x-request-id']);

  // Another token of the same account shares its count; another account has its own.
  const again = await t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    payload: { email: a.email, password: a.password },
    remoteAddress: '192.0.2.10',
  });
  assert.is(again.statusCode, 200, again.body);
  const other = await get({ ...a, auth: { authorization: `Bearer ${again.json().token}` } }, '/api/v1/me');
  assert.is(other.statusCode, 429);
  assert.is((await get(b, '/api/v1/me')).statusCode, 200);
});

test('a request past the limit is refused before its handler runs: nothing is written', async () => {
  const a = await account();
  for (let i = 0; i < LIMIT; i++) assert.is((await get(a, '/api/v1/projects/')).statusCode, 200);
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/projects/',
    headers: a.auth,
    payload: { name: 'over-the-limit' },
  });
  assert.is(res.statusCode, 429, res.body);
  assert.is(await t.inContext(() => t.kernel.orm.em.count(Project, { accountId: a.accountId })), 0);
});

test('requests without a token are counted per address (an IPv6 /64), before their body is checked', async () => {
  const login = (remoteAddress: string) =>
    t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { nope: true }, remoteAddress });
  for (let i = 0; i < LIMIT; i++) assert.is((await login(`2001:db8:1:1::${i + 1}`)).statusCode, 400);
  const refused = await login('2001:db8:1:1::ffff');
  assert.is(refused.statusCode, 429, refused.body);
  assert.match(refused.json().error.message, 'for this address');
  assert.is((await login('2001:db8:1:2::1')).statusCode, 400, 'another /64 has its own count');
});

test('requests refused for their token are counted per address too, on the REST API and the agent tools', async () => {
  for (const [url, prefix] of [
    ['/api/v1/me', '2001:db8:2:1::'],
    ['/agent/v1/whoami', '2001:db8:2:2::'],
  ]) {
    const send = (authorization: string | undefined, remoteAddress: string) =>
      t.app.inject({ method: 'GET', url, headers: authorization ? { authorization } : {}, remoteAddress });
    // A forged token, a malformed header and none at all: each is 401 until the address's count is spent.
    const tries = ['Bearer forged.token.here', 'Basic abc', undefined];
    for (let i = 0; i < LIMIT; i++) {
      const res = await send(tries[i % tries.length], `${prefix}${i + 1}`);
      assert.is(res.statusCode, 401, res.body);
      assert.is(res.headers['x-ratelimit-remaining'], String(LIMIT - i - 1), url);
    }
    const refused = await send('Bearer forged.token.here', `${prefix}ffff`);
    assert.is(refused.statusCode, 429, refused.body);
    assert.match(refused.json().error.message, 'for this address');
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    assert.is(
      (await send('Bearer forged.token.here', '2001:db8:3:1::1')).statusCode,
      401,
      'another /64: its own count',
    );
  }
  // A good token from a spent address is counted for its account, not refused with the address.
  const a = await account();
  const res = await t.app.inject({
    method: 'GET',
    url: '/api/v1/me',
    headers: a.auth,
    remoteAddress: '2001:db8:2:1::9',
  });
  assert.is(res.statusCode, 200, res.body);
});

test('behind the proxy (trustProxy) the address it saw counts, not what a client puts in X-Forwarded-For', async () => {
  const proxied = await testApi({ apiRequestsPerMinute: LIMIT, trustProxy: true });
  try {
    const login = (forwarded: string) =>
      proxied.app.inject({
        method: 'POST',
        url: '/api/v1/auth/login',
        payload: { nope: true },
        remoteAddress: '10.0.0.1',
        headers: { 'x-forwarded-for': forwarded },
      });
    // A client that names another address each time, and one it does not have, is counted where the proxy saw it.
    for (let i = 0; i < LIMIT; i++) assert.is((await login(`198.51.100.${i}, 203.0.113.7`)).statusCode, 400);
    assert.is((await login('not-an-address, 203.0.113.7')).statusCode, 429);
    // The victim it named is not held back by it.
    assert.is((await login('198.51.100.1')).statusCode, 400);
  } finally {
    await proxied.close();
  }
});

test('the health routes and the OpenAPI document are not counted', async () => {
  for (let i = 0; i < LIMIT * 2; i++) {
    const res = await get(null, '/healthz');
    assert.is(res.statusCode, 200);
    assert.is(res.headers['x-ratelimit-limit'], undefined);
  }
  assert.is((await get(null, '/api/v1/openapi.json')).statusCode, 200);
  const doc = (await get(null, '/api/v1/openapi.json')).json();
  assert.match(doc.info.description, `Each account may send ${LIMIT} requests a minute`);
});

test('apiRequestsPerMinute 0 limits nothing', async () => {
  const open = await testApi({ apiRequestsPerMinute: 0 });
  try {
    const a = await open.account();
    for (let i = 0; i < LIMIT * 3; i++) {
      const res = await open.app.inject({ method: 'GET', url: '/api/v1/me', headers: a.auth });
      assert.is(res.statusCode, 200);
      assert.is(res.headers['x-ratelimit-limit'], undefined);
    }
  } finally {
    await open.close();
  }
});

test.run();
