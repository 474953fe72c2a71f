// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { User } from '../../../core/entities/user.js';
import { testApi, type TestApi } from '../../helpers/api.js';

let t: TestApi;
test.before(async () => {
  t = await testApi();
});
test.after(async () => t?.close());

const login = async (email: string, password: string, userAgent: string) => {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    payload: { email, password },
    headers: { 'user-agent': userAgent },
    remoteAddress: '10.1.2.3',
  });
  assert.is(res.statusCode, 200);
  return { authorization: `Bearer ${res.json().token as string}` };
};
const sessions = (headers: Record<string, string>) =>
  t.app.inject({ method: 'GET', url: '/api/v1/auth/sessions', headers });
const logout = (headers: Record<string, string>) =>
  t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers });

test('sessions lists the active sessions of the user only, marking the current one', async () => {
  const a = await t.account();
  await t.account(); // another user's session must not show
  const laptop = await login(a.email, a.password, 'laptop/1.0');
  const phone = await login(a.email, a.password, 'phone/2.0');
  const res = await sessions(laptop);
  assert.is(res.statusCode, 200);
  const list = res.json().sessions as Record<string, unknown>[];
  assert.is(list.length, 3);
  assert.equal(Object.keys(list[0]).sort(), ['address', 'created_at', 'current', 'expires_at', 'id', 'user_agent']);
  assert.equal(
    list.filter((s) => s.current).map((s) => s.user_agent),
    ['laptop/1.0'],
  );
  const mine = list.find((s) => s.user_agent === 'phone/2.0')!;
  assert.is(mine.address, '10.1.2.3');
  assert.ok(Date.parse(mine.expires_at as string) > Date.parse(mine.created_at as string));
  assert.equal(
    (await sessions(phone))
      .json()
      .sessions.filter((s: { current: boolean }) => s.current)
      .map((s: { user_agent: string }) => s.user_agent),
    ['phone/2.0'],
  );
});

test('logout revokes only the current session: its token gets 401, the others still work', async () => {
  const a = await t.account();
  const laptop = await login(a.email, a.password, 'laptop/1.0');
  const res = await logout(a.auth);
  assert.is(res.statusCode, 204);
  assert.is(res.body, '');
  const again = await sessions(a.auth);
  assert.is(again.statusCode, 401);
  assert.is(again.json().error.code, 'unauthorized');
  assert.is((await logout(a.auth)).statusCode, 401);
  const left = await sessions(laptop);
  assert.is(left.statusCode, 200);
  assert.equal(
    left.json().sessions.map((s: { user_agent: string }) => s.user_agent),
    ['laptop/1.0'],
  );
});

test('logout and sessions without a token are 401', async () => {
  for (const res of [await logout({}), await sessions({})]) {
    assert.is(res.statusCode, 401);
    assert.is(res.json().error.code, 'unauthorized');
  }
});

test(
  'every registration attempt is 403 registration_disabled pointing at access ' + 'requests, and creates nothing',
  async () => {
    const before = await t.inContext(() => t.kernel.orm.em.count(User, {}));
    const attempts = [
      { url: '/api/v1/auth/register', payload: { email: 'new@example.com', password: 'long enough password' } },
      { url: '/api/v1/auth/register', payload: {} },
      { url: '/api/v1/auth/register', payload: '{not json', headers: { 'content-type': 'application/json' } },
      {
        url: '/api/v1/auth/register',
        payload: 'email=new@example.com',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      },
      { url: '/api/v1/auth/register' },
      { url: '/api/auth/register', payload: { email: 'new@example.com' } },
    ];
    for (const a of attempts) {
      const res = await t.app.inject({ method: 'POST', ...a });
      assert.is(res.statusCode, 403, JSON.stringify(a));
      assert.is(res.json().error.code, 'registration_disabled');
      assert.match(res.json().error.message, '/api/v1/access-requests');
    }
    assert.is(await t.inContext(() => t.kernel.orm.em.count(User, {})), before);
  },
);

test(
  'the OpenAPI document has the 8 authentication calls and access requests, not the ' + 'agent-tool interface',
  async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const auth = Object.entries(
      doc.paths as Record<string, Record<string, { tags?: string[]; security?: unknown; summary?: string }>>,
    )
      .flatMap(([path, ops]) =>
        Object.entries(ops).map(([method, op]) => ({ call: `${method.toUpperCase()} ${path}`, op })),
      )
      .filter((c) => c.op.tags?.includes('Authentication'));
    assert.equal(auth.map((c) => c.call).sort(), [
      'GET /api/v1/auth/sessions',
      'POST /api/v1/auth/email-verification',
      'POST /api/v1/auth/email-verification/confirm',
      'POST /api/v1/auth/login',
      'POST /api/v1/auth/logout',
      'POST /api/v1/auth/password-recovery',
      'POST /api/v1/auth/password-recovery/reset',
      'POST /api/v1/auth/register',
    ]);
    for (const c of auth) assert.ok(c.op.summary, c.call);
    const bearer = auth
      .filter((c) => c.op.security)
      .map((c) => c.call)
      .sort();
    assert.equal(bearer, [
      'GET /api/v1/auth/sessions',
      'POST /api/v1/auth/email-verification',
      'POST /api/v1/auth/logout',
    ]);
    assert.ok(doc.paths['/api/v1/access-requests'].post);
    assert.not.ok(Object.keys(doc.paths).some((p) => p.startsWith('/agent')));
  },
);

test.run();
