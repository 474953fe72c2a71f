// legs: db
import { RequestContext } from '@mikro-orm/core';
import { decodeJwt } from 'jose';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  AGENT_AUTH_SERVICE,
  type AgentAuthService,
  MAX_AGENT_GRANTS,
  MAX_AGENT_GRANTS_PER_DAY,
} from '../../../core/auth/agent-auth-service.js';
import { SESSIONS_CHANNEL, sessionKey } from '../../../core/auth/session-cache.js';
import { AgentGrant } from '../../../core/entities/agent-grant.js';
import { CHANGE_FEED, type ChangeFeed } from '../../../core/ports/change-feed.js';
import { testApi, type TestAccount, type TestApi } from '../../helpers/api.js';
import { resetPassword } from '../../helpers/mail.js';

let t: TestApi;
test.before(async () => {
  t = await testApi();
});
test.after(async () => t?.close());

const create = (a: TestAccount, payload: unknown) =>
  t.app.inject({ method: 'POST', url: '/api/v1/auth/agent-tokens', headers: a.auth, payload: payload as object });
const list = async (a: TestAccount) => {
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/auth/agent-tokens', headers: a.auth });
  assert.is(res.statusCode, 200);
  return res.json().agent_tokens as { id: string; name: string; source: string; expires_at: string }[];
};
const revoke = (a: TestAccount, id: string) =>
  t.app.inject({ method: 'DELETE', url: `/api/v1/auth/agent-tokens/${id}`, headers: a.auth });
const whoami = (token: string) =>
  t.app.inject({ method: 'GET', url: '/agent/v1/whoami', headers: { authorization: `Bearer ${token}` } });
const minted = async (a: TestAccount, name = 'my agent') => {
  const res = await create(a, { name });
  assert.is(res.statusCode, 201, res.body);
  return res.json() as { id: string; token: string; name: string; source: string; expires_at: string };
};
/** Three accepted calls: the token is in this process's cache afterwards. */
const warm = async (token: string) => {
  for (let i = 0; i < 3; i++) assert.is((await whoami(token)).statusCode, 200);
};
const refused = async (token: string, why: string) => {
  const res = await whoami(token);
  assert.is(res.statusCode, 401, why);
  assert.is(res.json().error.code, 'unauthorized', why);
};
const grants = (userId: string) =>
  RequestContext.create(t.kernel.orm.em.fork(), () => t.kernel.orm.em.find(AgentGrant, { userId }));

test('a user makes an agent token over REST: the MCP server takes it, REST does not, the list shows it', async () => {
  const a = await t.account();
  const made = await minted(a, '  Claude Code on my laptop ');
  assert.is(made.name, 'Claude Code on my laptop');
  assert.is(made.source, 'api');
  const claims = decodeJwt(made.token);
  assert.is(claims.jti, made.id);
  assert.is(claims.exp! - claims.iat!, 3600, 'the default lifetime');
  assert.is(new Date(made.expires_at).getTime(), claims.exp! * 1000);
  const who = await whoami(made.token);
  assert.is(who.statusCode, 200);
  assert.equal(who.json(), { user: { id: a.userId, email: a.email }, account: { id: a.accountId } });
  const rest = await t.app.inject({
    method: 'GET',
    url: '/api/v1/me',
    headers: { authorization: `Bearer ${made.token}` },
  });
  assert.is(rest.statusCode, 401, 'never a REST token');
  const shown = await list(a);
  assert.equal(
    shown.map((g) => [g.id, g.name, g.source]),
    [[made.id, 'Claude Code on my laptop', 'api']],
  );
  assert.not.ok(JSON.stringify(shown).includes(made.token), 'the list never shows a token');
  assert.equal(await list(await t.account()), [], "another user's list is empty");
  const week = await create(a, { name: 'week', ttl_seconds: 7 * 86400 });
  assert.is(week.statusCode, 201);
  const wc = decodeJwt(week.json().token);
  assert.is(wc.exp! - wc.iat!, 7 * 86400);
});

test('a revoked token is refused on the very next call; the user revokes only their own', async () => {
  const a = await t.account();
  const stranger = await t.account();
  const one = await minted(a, 'one');
  const two = await minted(a, 'two');
  await warm(one.token);
  await warm(two.token);
  const theirs = await revoke(stranger, one.id);
  assert.is(theirs.statusCode, 404, "another user's grant is not found");
  assert.is((await whoami(one.token)).statusCode, 200);
  assert.is((await revoke(a, 'not-a-uuid')).statusCode, 404);
  assert.is((await revoke(a, one.id)).statusCode, 204);
  await refused(one.token, 'the revoked token, cached before');
  assert.is((await whoami(two.token)).statusCode, 200, 'the other token stays');
  assert.is((await revoke(a, one.id)).statusCode, 404, 'revoked already');
  assert.equal(
    (await list(a)).map((g) => g.id),
    [two.id],
  );
});

test('bad names and lifetimes are 400 and make nothing', async () => {
  const a = await t.account();
  for (const [payload, why] of [
    [{}, 'no name'],
    [{ name: '' }, 'empty'],
    [{ name: '   ' }, 'blank'],
    [{ name: 'x'.repeat(101) }, 'too long'],
    [{ name: 'a\u0007b' }, 'a control character'],
    [{ name: 'safe \u202eexe.txt' }, 'a right-to-left override'],
    [{ name: 'a', ttl_seconds: 10 }, 'too short'],
    [{ name: 'a', ttl_seconds: 31 * 86400 }, 'too long a lifetime'],
    [{ name: 'a', ttl_seconds: 1.5 }, 'not an integer'],
    [{ name: 'a', scope: 'all' }, 'an unknown field'],
  ] as const) {
    const res = await create(a, payload);
    assert.is(res.statusCode, 400, why);
    assert.is(res.json().error.code, 'invalid_request', why);
  }
  assert.equal(await grants(a.userId), [], 'no grant was stored');
});

test(`a user holds at most ${MAX_AGENT_GRANTS}: the next is 409 until one is revoked`, async () => {
  const a = await t.account();
  const made = [];
  for (let i = 0; i < MAX_AGENT_GRANTS; i++) made.push(await minted(a, `agent ${i}`));
  const over = await create(a, { name: 'one more' });
  assert.is(over.statusCode, 409);
  assert.is(over.json().error.code, 'conflict');
  assert.is(over.json().error.details.limit, MAX_AGENT_GRANTS);
  assert.is((await grants(a.userId)).length, MAX_AGENT_GRANTS, 'nothing stored past the limit');
  assert.is((await revoke(a, made[0].id)).statusCode, 204);
  await minted(a, 'room again');
  assert.is((await minted(await t.account(), 'another user')).source, 'api', "another user's count is its own");
});

test(`racing requests never get a user past ${MAX_AGENT_GRANTS}`, async () => {
  const a = await t.account();
  const answers = await Promise.all(
    Array.from({ length: MAX_AGENT_GRANTS + 20 }, (_, i) => create(a, { name: `race ${i}` })),
  );
  const codes = answers.map((r) => r.statusCode);
  assert.is(codes.filter((c) => c === 201).length, MAX_AGENT_GRANTS, codes.join(','));
  assert.is(codes.filter((c) => c === 409).length, 20);
  assert.is((await grants(a.userId)).length, MAX_AGENT_GRANTS);
});

test(`a user makes at most ${MAX_AGENT_GRANTS_PER_DAY} in 24 hours, revoked ones counted: then 429`, async () => {
  const a = await t.account();
  const day = 24 * 3600 * 1000;
  // Made and revoked earlier: the oldest a day old but for a minute, one more older than a day (not counted).
  await t.inContext(async () => {
    const em = t.kernel.orm.em;
    for (let i = 0; i < MAX_AGENT_GRANTS_PER_DAY; i++) {
      const createdAt = new Date(Date.now() - (i === 0 ? day + 60_000 : day - 60_000 - i * 1000));
      em.persist(
        Object.assign(new AgentGrant(), {
          userId: a.userId,
          name: `old ${i}`,
          source: 'api' as const,
          createdAt,
          expiresAt: new Date(createdAt.getTime() + 3_600_000),
          revokedAt: createdAt,
        }),
      );
    }
    await em.flush();
  });
  await minted(a, 'the last of the day');
  const over = await create(a, { name: 'one too many' });
  assert.is(over.statusCode, 429, over.body);
  const { error } = over.json();
  assert.is(error.code, 'rate_limited');
  assert.is(error.details.limit, MAX_AGENT_GRANTS_PER_DAY);
  // Free again when the oldest counted turns a day old: in about a minute.
  assert.ok(error.details.retry_after >= 1 && error.details.retry_after <= 61, JSON.stringify(error));
  assert.is(over.headers['retry-after'], String(error.details.retry_after));
  assert.is((await grants(a.userId)).length, MAX_AGENT_GRANTS_PER_DAY + 1, 'nothing stored past the limit');
});

test("a password reset refuses the user's agent tokens at once, cached ones too", async () => {
  const a = await t.account();
  const stranger = await t.account();
  const mine = await minted(a);
  const theirs = await minted(stranger);
  await warm(mine.token);
  await warm(theirs.token);
  await resetPassword(t, a.email, 'a brand new password');
  await refused(mine.token, 'after the reset');
  assert.is((await whoami(theirs.token)).statusCode, 200, "another user's token stays");
});

test('a token minted by the admin CLI is listed as admin and revoked like the others', async () => {
  const a = await t.account();
  const admin = await t.inContext(() => t.kernel.get<AgentAuthService>(AGENT_AUTH_SERVICE).mint(a.email, 600));
  assert.is(admin.user.id, a.userId);
  const shown = await list(a);
  assert.equal(
    shown.map((g) => [g.id, g.source, g.name]),
    [[admin.id, 'admin', 'admin CLI']],
  );
  await warm(admin.token);
  assert.is((await revoke(a, admin.id)).statusCode, 204);
  await refused(admin.token, 'the revoked admin token');
});

test("another process's revocation, announced on the change feed, refuses a cached token", async () => {
  const a = await t.account();
  const made = await minted(a);
  await warm(made.token);
  await RequestContext.create(t.kernel.orm.em.fork(), () =>
    t.kernel.orm.em.nativeUpdate(AgentGrant, { id: made.id }, { revokedAt: new Date() }),
  );
  assert.is((await whoami(made.token)).statusCode, 200, 'the cache answers until the announcement');
  await t.kernel.get<ChangeFeed>(CHANGE_FEED).publish(SESSIONS_CHANNEL, sessionKey(made.id));
  const deadline = performance.now() + 5000;
  while ((await whoami(made.token)).statusCode === 200 && performance.now() < deadline) await sleep(10);
  await refused(made.token, 'after the announcement');
});

test('a token whose grant row is gone is refused', async () => {
  const a = await t.account();
  const made = await minted(a);
  await RequestContext.create(t.kernel.orm.em.fork(), () => t.kernel.orm.em.nativeDelete(AgentGrant, { id: made.id }));
  await refused(made.token, 'no grant');
});

test.run();
