// legs: db
import { RequestContext } from '@mikro-orm/core';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SESSIONS_CHANNEL, sessionKey, userKey } from '../../../core/auth/session-cache.js';
import { Session } from '../../../core/entities/session.js';
import { CHANGE_FEED, type ChangeFeed } from '../../../core/ports/change-feed.js';
import { resetPassword } from '../../helpers/mail.js';
import { testApi, type TestApi } from '../../helpers/api.js';

let t: TestApi;
test.before(async () => {
  t = await testApi();
});
test.after(async () => t?.close());

const me = (headers: Record<string, string>) => t.app.inject({ method: 'GET', url: '/api/v1/me', headers });
const login = async (email: string, password: string) => {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } });
  assert.is(res.statusCode, 200);
  return { authorization: `Bearer ${res.json().token as string}` };
};
const refused = async (headers: Record<string, string>, why: string) => {
  const res = await me(headers);
  assert.is(res.statusCode, 401, why);
  assert.is(res.json().error.code, 'unauthorized');
};
// On PostgreSQL the feed is LISTEN/NOTIFY: an announcement arrives a moment after it is sent, to this process too.
const refusedOnceAnnounced = async (headers: Record<string, string>, why: string) => {
  const deadline = performance.now() + 5000;
  while ((await me(headers)).statusCode === 200 && performance.now() < deadline) await sleep(10);
  await refused(headers, why);
};
const warm = async (headers: Record<string, string>) => {
  for (let i = 0; i < 3; i++) assert.is((await me(headers)).statusCode, 200);
};
// What another process does when it revokes: the row changes, this process's cache does not know yet.
const revokeInDatabase = (where: { id: string } | { userId: string }) =>
  RequestContext.create(t.kernel.orm.em.fork(), () =>
    t.kernel.orm.em.nativeUpdate(Session, { ...where, revokedAt: null }, { revokedAt: new Date() }),
  );
const sessionOf = async (headers: Record<string, string>) =>
  (await t.app.inject({ method: 'GET', url: '/api/v1/auth/sessions', headers }))
    .json()
    .sessions.find((s: { current: boolean }) => s.current).id as string;

test('a token used before its logout is refused on the very next request; other sessions keep working', async () => {
  const a = await t.account();
  const other = await login(a.email, a.password);
  await warm(a.auth);
  await warm(other);
  assert.is((await t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: a.auth })).statusCode, 204);
  await refused(a.auth, 'the logged-out token');
  assert.is((await me(other)).statusCode, 200);
});

test('a password reset refuses every cached session of the user at once', async () => {
  const a = await t.account();
  const other = await login(a.email, a.password);
  const stranger = await t.account();
  await warm(a.auth);
  await warm(other);
  await warm(stranger.auth);
  await resetPassword(t, a.email, 'a brand new password');
  await refused(a.auth, 'the first session');
  await refused(other, 'the second session');
  assert.is((await me(stranger.auth)).statusCode, 200, "another user's session stays");
});

test("another process's revocation, announced on the change feed, is refused on the next request", async () => {
  const feed = t.kernel.get<ChangeFeed>(CHANGE_FEED);
  const a = await t.account();
  const other = await login(a.email, a.password);
  await warm(a.auth);
  await warm(other);
  const id = await sessionOf(a.auth);
  await revokeInDatabase({ id });
  // Until the announcement arrives the cache answers (README: the cross-process window is the feed's latency).
  assert.is((await me(a.auth)).statusCode, 200);
  await feed.publish(SESSIONS_CHANNEL, sessionKey(id));
  await refusedOnceAnnounced(a.auth, 'after the announcement');
  assert.is((await me(other)).statusCode, 200);

  await revokeInDatabase({ userId: a.userId });
  await feed.publish(SESSIONS_CHANNEL, userKey(a.userId));
  await refusedOnceAnnounced(other, 'after the user-wide announcement');
});

test('an announcement the cache does not recognise makes every token be checked again', async () => {
  const a = await t.account();
  await warm(a.auth);
  await revokeInDatabase({ id: await sessionOf(a.auth) });
  await t.kernel.get<ChangeFeed>(CHANGE_FEED).publish(SESSIONS_CHANNEL, 'all');
  await refusedOnceAnnounced(a.auth, 'after a drop of everything');
});

test('with the cache off (authCacheSize 0) a revoked session is refused as well', async () => {
  const off = await testApi({ authCacheSize: 0 });
  try {
    const a = await off.account();
    const get = () => off.app.inject({ method: 'GET', url: '/api/v1/me', headers: a.auth });
    assert.is((await get()).statusCode, 200);
    await RequestContext.create(off.kernel.orm.em.fork(), () =>
      off.kernel.orm.em.nativeUpdate(Session, { userId: a.userId }, { revokedAt: new Date() }),
    );
    assert.is((await get()).statusCode, 401);
  } finally {
    await off.close();
  }
});

test.run();
