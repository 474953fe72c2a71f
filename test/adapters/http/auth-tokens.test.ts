// legs: db
import { base64url, decodeJwt, SignJWT } from 'jose';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AGENT_AUTH_SERVICE, type AgentAuthService } from '../../../core/auth/agent-auth-service.js';
import { testApi, type TestAccount, type TestApi } from '../../helpers/api.js';

let t: TestApi;
let a: TestAccount;
let key: Uint8Array;
test.before(async () => {
  t = await testApi();
  a = await t.account();
  key = new TextEncoder().encode(readFileSync(join(t.kernel.config.dataDir, 'jwt.key'), 'utf8').trim());
});
test.after(async () => t?.close());

const rest = (authorization?: string) =>
  t.app.inject({
    method: 'GET',
    url: '/api/v1/auth/sessions',
    headers: authorization === undefined ? {} : { authorization },
  });
const agent = (authorization?: string) =>
  t.app.inject({
    method: 'GET',
    url: '/agent/v1/whoami',
    headers: authorization === undefined ? {} : { authorization },
  });
const is401 = (res: Awaited<ReturnType<typeof rest>>, what: string) => {
  assert.is(res.statusCode, 401, what);
  assert.is(res.json().error.code, 'unauthorized', what);
  assert.ok(res.json().error.request_id, what);
};
const mintAgent = (email: string) => t.inContext(() => t.kernel.get<AgentAuthService>(AGENT_AUTH_SERVICE).mint(email));

/** A token with the real key and the claims of `a`'s session, changed by `edit`. */
async function forge(edit: (jwt: SignJWT) => SignJWT, header: Record<string, unknown> = {}, alg = 'HS256') {
  const claims = decodeJwt(a.token);
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({})
    .setProtectedHeader({ alg, typ: 'hoist-rest+jwt', ...header })
    .setIssuer('hoist')
    .setAudience('hoist-rest-api')
    .setSubject(claims.sub!)
    .setJti(claims.jti!)
    .setIssuedAt(now)
    .setExpirationTime(now + 600);
  return edit(jwt).sign(key);
}

test(
  'the real token and a forged copy of it with the real key pass (so the cases ' + 'below fail for their one change)',
  async () => {
    assert.is((await rest(a.auth.authorization)).statusCode, 200);
    assert.is((await rest(`Bearer ${await forge((j) => j)}`)).statusCode, 200);
  },
);

test('missing, other-scheme and malformed Authorization headers are 401', async () => {
  is401(await rest(), 'missing');
  is401(await rest(`Basic ${Buffer.from(`${a.email}:${a.password}`).toString('base64')}`), 'basic');
  is401(await rest('Bearer'), 'empty bearer');
  is401(await rest('Bearer not a token'), 'spaces');
  is401(await rest('Bearer abc.def.ghi'), 'garbage jwt');
  is401(await rest(a.token), 'no scheme');
});

test('a tampered payload or signature is 401', async () => {
  const [h, p, s] = a.token.split('.');
  const other = await t.account();
  const payload = { ...JSON.parse(Buffer.from(p, 'base64url').toString()), sub: other.userId };
  is401(await rest(`Bearer ${h}.${base64url.encode(JSON.stringify(payload))}.${s}`), 'payload');
  const flipped = s.slice(0, 10) + (s[10] === 'A' ? 'B' : 'A') + s.slice(11);
  is401(await rest(`Bearer ${h}.${p}.${flipped}`), 'signature');
});

test('alg none is 401', async () => {
  const [, p] = a.token.split('.');
  const header = base64url.encode(JSON.stringify({ alg: 'none', typ: 'hoist-rest+jwt' }));
  is401(await rest(`Bearer ${header}.${p}.`), 'alg none');
});

test('an expired token signed with the real key is 401', async () => {
  const now = Math.floor(Date.now() / 1000);
  is401(await rest(`Bearer ${await forge((j) => j.setIssuedAt(now - 600).setExpirationTime(now - 60))}`), 'expired');
});

test('wrong type, audience, issuer, algorithm or missing jti with the real key are 401', async () => {
  is401(await rest(`Bearer ${await forge((j) => j, { typ: 'JWT' })}`), 'typ JWT');
  is401(await rest(`Bearer ${await forge((j) => j, { typ: 'hoist-agent+jwt' })}`), 'agent typ');
  is401(await rest(`Bearer ${await forge((j) => j.setAudience('hoist-agent-tools'))}`), 'agent audience');
  is401(await rest(`Bearer ${await forge((j) => j.setIssuer('someone-else'))}`), 'issuer');
  is401(await rest(`Bearer ${await forge((j) => j, {}, 'HS512')}`), 'HS512');
  is401(await rest(`Bearer ${await forge((j) => j.setJti(crypto.randomUUID()))}`), 'unknown session');
  const claims = decodeJwt(a.token);
  const noJti = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'hoist-rest+jwt' })
    .setIssuer('hoist')
    .setAudience('hoist-rest-api')
    .setSubject(claims.sub!)
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(key);
  is401(await rest(`Bearer ${noJti}`), 'no jti');
});

test('an agent token is 401 on REST and works on the agent-tool interface', async () => {
  const minted = await mintAgent(a.email);
  assert.ok(decodeJwt(minted.token).jti);
  is401(await rest(`Bearer ${minted.token}`), 'agent on REST');
  const res = await agent(`Bearer ${minted.token}`);
  assert.is(res.statusCode, 200);
  assert.equal(res.json(), { user: { id: a.userId, email: a.email }, account: { id: a.accountId } });
});

test('a REST token, a missing one and garbage are 401 on the agent-tool interface', async () => {
  is401(await agent(a.auth.authorization), 'REST on agent');
  is401(await agent(), 'missing');
  is401(await agent('Bearer abc.def.ghi'), 'garbage');
  const now = Math.floor(Date.now() / 1000);
  const expired = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'hoist-agent+jwt' })
    .setIssuer('hoist')
    .setAudience('hoist-agent-tools')
    .setSubject(a.userId)
    .setJti(crypto.randomUUID())
    .setIssuedAt(now - 600)
    .setExpirationTime(now - 60)
    .sign(key);
  is401(await agent(`Bearer ${expired}`), 'expired agent');
});

test('minting for an unknown e-mail or with a bad ttl fails and signs nothing', async () => {
  const agents = t.kernel.get<AgentAuthService>(AGENT_AUTH_SERVICE);
  for (const [email, ttl, code] of [
    ['ghost@example.com', 3600, 'not_found'],
    [a.email, 10, 'invalid_request'],
    [a.email, 1.5, 'invalid_request'],
    [a.email, 10_000_000, 'invalid_request'],
  ] as const) {
    const err = await t
      .inContext(() => agents.mint(email, ttl))
      .then(
        () => null,
        (e) => e,
      );
    assert.is(err?.code, code, `${email} ${ttl}`);
  }
});

test.run();
