// legs: db
import { RequestContext } from '@mikro-orm/core';
import { decodeJwt } from 'jose';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { buildApi } from '../../../adapters/http/app.js';
import { ACCOUNT_SERVICE, type AccountService } from '../../../core/accounts/account-service.js';
import { testCli, type TestCli } from '../../helpers/cli.js';

let cli: TestCli;
test.before(async () => {
  cli = await testCli();
  await RequestContext.create(cli.kernel.orm.em.fork(), () =>
    cli.kernel
      .get<AccountService>(ACCOUNT_SERVICE)
      .create({ email: 'agent-owner@example.com', password: 'long enough password' }),
  );
});
test.after(async () => cli?.close());

const whoami = async (token: string) => {
  const app = await buildApi(cli.kernel);
  try {
    return await app.inject({ method: 'GET', url: '/agent/v1/whoami', headers: { authorization: `Bearer ${token}` } });
  } finally {
    await app.close();
  }
};

test('tokens mint-agent prints an agent token the agent-tool interface accepts and REST refuses', async () => {
  const res = await cli.run(['tokens', 'mint-agent', '--email', 'Agent-Owner@example.com']);
  assert.is(res.code, 0, res.stderr);
  const token = res.stdout.trim();
  const claims = decodeJwt(token);
  assert.ok(claims.jti);
  assert.is(claims.aud, 'hoist-agent-tools');
  assert.is(claims.exp! - claims.iat!, 3600);
  const ok = await whoami(token);
  assert.is(ok.statusCode, 200);
  assert.is(ok.json().user.email, 'agent-owner@example.com');
  const app = await buildApi(cli.kernel);
  const rest = await app.inject({
    method: 'GET',
    url: '/api/v1/auth/sessions',
    headers: { authorization: `Bearer ${token}` },
  });
  await app.close();
  assert.is(rest.statusCode, 401);
});

test('--ttl sets the lifetime and --json prints id, token, expires_at and user', async () => {
  const res = await cli.run(['tokens', 'mint-agent', '--email', 'agent-owner@example.com', '--ttl', '120', '--json']);
  assert.is(res.code, 0, res.stderr);
  const out = JSON.parse(res.stdout);
  assert.equal(Object.keys(out).sort(), ['expires_at', 'id', 'token', 'user']);
  assert.is(out.id, decodeJwt(out.token).jti);
  const claims = decodeJwt(out.token);
  assert.is(claims.exp! - claims.iat!, 120);
  assert.is(new Date(out.expires_at).getTime(), claims.exp! * 1000);
});

test(
  'a bad ttl exits 2 and an unknown e-mail exits 1, printing no token (ttl bounds: ' + 'auth-tokens.test.ts)',
  async () => {
    const bad = await cli.run(['tokens', 'mint-agent', '--email', 'agent-owner@example.com', '--ttl', 'soon']);
    assert.is(bad.code, 2, bad.stderr);
    assert.is(bad.stdout, '');
    assert.match(bad.stderr, 'ttl');
    const res = await cli.run(['tokens', 'mint-agent', '--email', 'nobody@example.com']);
    assert.is(res.code, 1);
    assert.is(res.stdout, '');
    assert.match(res.stderr, 'not found');
  },
);

test.run();
