// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { testApi, type TestApi } from '../../helpers/api.js';

let t: TestApi;
test.before(async () => {
  t = await testApi();
});
test.after(async () => t?.close());

test('login answers token, expires_at and user as the spec says', async () => {
  const a = await t.account();
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    payload: { email: a.email.toUpperCase(), password: a.password },
  });
  assert.is(res.statusCode, 200);
  const body = res.json();
  assert.type(body.token, 'string');
  assert.ok(Date.parse(body.expires_at) > Date.now());
  assert.equal(body.user, { id: a.userId, email: a.email });
  assert.match(body.user.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
});

test('wrong password and unknown e-mail get the same 401', async () => {
  const a = await t.account();
  const wrong = await t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    payload: { email: a.email, password: 'nope-nope' },
  });
  const unknown = await t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    payload: { email: 'ghost@example.com', password: 'nope-nope' },
  });
  assert.is(wrong.statusCode, 401);
  assert.is(unknown.statusCode, 401);
  assert.is(wrong.json().error.code, 'unauthorized');
  assert.is(wrong.json().error.message, unknown.json().error.message);
  assert.ok(wrong.json().error.request_id);
  assert.is(wrong.headers['x-request-id'], wrong.json().error.request_id);
});

test('missing field and unknown field are 400 naming the field', async () => {
  const missing = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'a@b.co' } });
  assert.is(missing.statusCode, 400);
  assert.is(missing.json().error.code, 'invalid_request');
  assert.is(missing.json().error.details.field, 'password');
  const extra = await t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    payload: { email: 'a@b.co', password: 'x', admin: true },
  });
  assert.is(extra.statusCode, 400);
  assert.is(extra.json().error.details.field, 'admin');
});

test('the /api alias runs the same handler with no redirect', async () => {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { email: 'ghost@example.com', password: 'x' },
  });
  assert.is(res.statusCode, 401);
  assert.is(res.json().error.code, 'unauthorized');
});

test('unknown route is 404 with the error body', async () => {
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/nothing-here' });
  assert.is(res.statusCode, 404);
  assert.is(res.json().error.code, 'not_found');
});

test.run();
