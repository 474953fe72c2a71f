// Two API processes on PostgreSQL (changes=postgres: LISTEN/NOTIFY): a token both have cached is refused by the
// one that served its logout at once, and by the other as soon as the notification arrives (the delay is printed;
// the wait allows seconds, so a loaded machine does not fail it).
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SESSIONS_CHANNEL, userKey } from '../../core/auth/session-cache.js';
import { CHANGE_FEED, type ChangeFeed } from '../../core/ports/change-feed.js';
import { cluster, type Cluster, type RoleProcess } from '../helpers/roles.js';

let c: Cluster;
let a: RoleProcess;
let b: RoleProcess;
test.before(async () => {
  c = await cluster();
  [a, b] = await Promise.all([c.start('api'), c.start('api')]);
});
test.after(async () => c?.close());

const me = async (api: RoleProcess, token: string) =>
  (await fetch(`${api.url}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } })).status;
const warm = async (token: string) => {
  for (const api of [a, b]) for (let i = 0; i < 3; i++) assert.is(await me(api, token), 200);
};
/** Milliseconds until `api` refuses `token` (fails after 5 s). */
const refusedAfter = async (api: RoleProcess, token: string) => {
  const start = performance.now();
  while ((await me(api, token)) === 200) {
    assert.ok(performance.now() - start < 5000, 'still accepted 5 s after the revocation');
    await sleep(2);
  }
  assert.is(await me(api, token), 401);
  return performance.now() - start;
};
const login = async (api: RoleProcess, email: string, password: string) => {
  const res = await fetch(`${api.url}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  assert.is(res.status, 200);
  return (await res.json()).token as string;
};

test('a logout on one API process: refused there at once, and on the other once notified', async () => {
  const token = await c.login(a.url);
  await warm(token);
  const res = await fetch(`${a.url}/api/v1/auth/logout`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  assert.is(res.status, 204);
  assert.is(await me(a, token), 401, 'the process that served the logout refuses the very next request');
  console.log(
    `  the other API process refused the logged-out token after ${(await refusedAfter(b, token)).toFixed(1)} ms`,
  );
});

test('a revocation announced by a third process reaches both API processes', async () => {
  const token = await c.login(a.url);
  const user = await whoAmI(a, token);
  const other = await login(b, user.email, 'correct horse battery');
  await warm(token);
  await warm(other);
  await c.kernel.orm.em
    .fork()
    .getConnection()
    .execute('update sessions set revoked_at = now() where user_id = ?', [user.id]);
  await c.kernel.get<ChangeFeed>(CHANGE_FEED).publish(SESSIONS_CHANNEL, userKey(user.id));
  for (const api of [a, b]) for (const t of [token, other]) await refusedAfter(api, t);
});

async function whoAmI(api: RoleProcess, token: string) {
  const res = await fetch(`${api.url}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } });
  return (await res.json()).user as { id: string; email: string };
}

test.run();
