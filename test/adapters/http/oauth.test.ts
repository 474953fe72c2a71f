// legs: db
// OAuth 2.1 for the agent-tool interface, as an MCP client goes through it: discovery from the MCP server's 401,
// registration, the consent page, the code exchange with PKCE, refresh, revocation; and every bad input refused
// with OAuth's error, nothing granted.
import { RequestContext } from '@mikro-orm/core';
import { decodeJwt } from 'jose';
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pkce } from '../../../core/auth/oauth-service.js';
import { AgentGrant } from '../../../core/entities/agent-grant.js';
import { testApi, type TestAccount, type TestApi } from '../../helpers/api.js';

let t: TestApi;
let a: TestAccount;
test.before(async () => {
  t = await testApi();
  a = await t.account();
});
test.after(async () => t?.close());

const REDIRECT = 'http://127.0.0.1:33418/callback';
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

const register = (body: unknown) => t.app.inject({ method: 'POST', url: '/oauth/register', payload: body as object });
const clientId = async (name = 'Claude Code', redirect_uris = [REDIRECT]) => {
  const res = await register({ client_name: name, redirect_uris, token_endpoint_auth_method: 'none' });
  assert.is(res.statusCode, 201, res.body);
  return res.json().client_id as string;
};
const verifier = () => randomBytes(32).toString('base64url');
const authorizeQuery = (client: string, v: string, extra: Record<string, string> = {}) => ({
  response_type: 'code',
  client_id: client,
  redirect_uri: REDIRECT,
  state: 'xyz',
  code_challenge: pkce(v),
  code_challenge_method: 'S256',
  ...extra,
});
const consent = (fields: Record<string, string>) =>
  t.app.inject({ method: 'POST', url: '/oauth/authorize', headers: FORM, payload: form(fields) });
const token = (fields: Record<string, string>) =>
  t.app.inject({ method: 'POST', url: '/oauth/token', headers: FORM, payload: form(fields) });
const whoami = (access: string) =>
  t.app.inject({ method: 'GET', url: '/agent/v1/whoami', headers: { authorization: `Bearer ${access}` } });
const grantsOf = (userId: string) =>
  RequestContext.create(t.kernel.orm.em.fork(), () => t.kernel.orm.em.find(AgentGrant, { userId }));

/** Registration, consent with the user's password, and the code from the redirect. */
async function codeFor(user: TestAccount, v: string, client?: string) {
  const id = client ?? (await clientId());
  const res = await consent({
    ...authorizeQuery(id, v),
    decision: 'allow',
    email: user.email,
    password: user.password,
  });
  assert.is(res.statusCode, 303, res.body);
  const back = new URL(res.headers.location as string);
  assert.is(`${back.origin}${back.pathname}`, REDIRECT);
  assert.is(back.searchParams.get('state'), 'xyz');
  assert.ok(back.searchParams.get('iss'));
  return { client: id, code: back.searchParams.get('code')! };
}
async function connected(user: TestAccount) {
  const v = verifier();
  const { client, code } = await codeFor(user, v);
  const res = await token({
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT,
    client_id: client,
    code_verifier: v,
  });
  assert.is(res.statusCode, 200, res.body);
  return { client, code, v, ...(res.json() as { access_token: string; refresh_token: string; expires_in: number }) };
}
const oauthError = (res: { statusCode: number; json(): any }, error: string, why: string) => {
  assert.is(res.statusCode, 400, why);
  assert.is(res.json().error, error, why);
  assert.type(res.json().error_description, 'string', why);
};

test('an MCP client finds the authorization server from the 401 of the MCP server', async () => {
  const res = await t.app.inject({ method: 'POST', url: '/agent/v1/mcp', payload: {} });
  assert.is(res.statusCode, 401);
  const header = res.headers['www-authenticate'] as string;
  const m = /^Bearer resource_metadata="([^"]+)"$/.exec(header);
  assert.ok(m, header);
  const meta = await t.app.inject({ method: 'GET', url: new URL(m[1]).pathname });
  assert.is(meta.statusCode, 200);
  const resource = meta.json();
  assert.match(resource.resource, /\/agent\/v1\/mcp$/);
  const issuer = resource.authorization_servers[0];
  const as = (await t.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' })).json();
  assert.is(as.issuer, issuer);
  for (const k of ['authorization_endpoint', 'token_endpoint', 'registration_endpoint', 'revocation_endpoint'])
    assert.ok(as[k].startsWith(issuer), k);
  assert.equal(as.code_challenge_methods_supported, ['S256']);
  assert.equal(as.grant_types_supported, ['authorization_code', 'refresh_token']);
});

test('the consent page says who asks and where it sends the user; it cannot be framed', async () => {
  const client = await clientId('<b>Agent</b>');
  const res = await t.app.inject({ method: 'GET', url: '/oauth/authorize', query: authorizeQuery(client, verifier()) });
  assert.is(res.statusCode, 200);
  assert.match(res.headers['content-type'] as string, 'text/html');
  assert.is(res.headers['x-frame-options'], 'DENY');
  assert.match(res.headers['content-security-policy'] as string, "frame-ancestors 'none'");
  assert.is(res.headers['cache-control'], 'no-store');
  assert.match(res.body, '&#60;b&#62;Agent&#60;/b&#62;');
  assert.not.match(res.body, '<b>Agent');
  assert.match(res.body, 'http://127.0.0.1:33418');
});

test('consent, code, tokens: the access token works on the agent-tool interface, not on REST', async () => {
  const c = await connected(a);
  assert.is(c.expires_in, 3600);
  const who = await whoami(c.access_token);
  assert.is(who.statusCode, 200);
  assert.is(who.json().user.id, a.userId);
  const rest = await t.app.inject({
    method: 'GET',
    url: '/api/v1/me',
    headers: { authorization: `Bearer ${c.access_token}` },
  });
  assert.is(rest.statusCode, 401);
  const listed = await t.app.inject({ method: 'GET', url: '/api/v1/auth/agent-tokens', headers: a.auth });
  assert.ok(
    listed
      .json()
      .agent_tokens.some((g: { name: string; source: string }) => g.name === 'Claude Code' && g.source === 'oauth'),
  );
});

test('a refresh gives new tokens and replaces the refresh token; the old one again revokes the grant', async () => {
  const u = await t.account();
  const c = await connected(u);
  const res = await token({ grant_type: 'refresh_token', refresh_token: c.refresh_token, client_id: c.client });
  assert.is(res.statusCode, 200, res.body);
  const next = res.json();
  assert.is.not(next.refresh_token, c.refresh_token);
  assert.is((await whoami(next.access_token)).statusCode, 200);
  oauthError(
    await token({ grant_type: 'refresh_token', refresh_token: c.refresh_token, client_id: c.client }),
    'invalid_grant',
    'the replaced refresh token',
  );
  assert.is((await whoami(next.access_token)).statusCode, 401, 'the grant ended with the reuse');
  oauthError(
    await token({ grant_type: 'refresh_token', refresh_token: next.refresh_token }),
    'invalid_grant',
    'the newest refresh token after the grant ended',
  );
});

test("a thief who refreshes twice before the client does: the client's old token still revokes the grant", async () => {
  const u = await t.account();
  const c = await connected(u);
  const first = (await token({ grant_type: 'refresh_token', refresh_token: c.refresh_token })).json();
  const second = (await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token })).json();
  assert.is((await whoami(second.access_token)).statusCode, 200);
  oauthError(await token({ grant_type: 'refresh_token', refresh_token: c.refresh_token }), 'invalid_grant', 'R1 again');
  assert.is((await whoami(second.access_token)).statusCode, 401, "the thief's tokens end too");
  oauthError(await token({ grant_type: 'refresh_token', refresh_token: second.refresh_token }), 'invalid_grant', 'R3');
});

test("knowing a grant's id (the jti of its access tokens) does not let anyone end it or refresh it", async () => {
  const u = await t.account();
  const c = await connected(u);
  const id = decodeJwt(c.access_token).jti!;
  for (const forged of [`${id}.${randomBytes(32).toString('base64url')}`, `${id}.0`, c.access_token]) {
    oauthError(await token({ grant_type: 'refresh_token', refresh_token: forged }), 'invalid_grant', forged);
  }
  assert.is((await whoami(c.access_token)).statusCode, 200, 'the grant stays');
  assert.is((await whoami(c.refresh_token)).statusCode, 401, 'a refresh token is no access token');
  assert.is((await token({ grant_type: 'refresh_token', refresh_token: c.refresh_token })).statusCode, 200);
});

test('a code is used once: used again, the grant it made is revoked', async () => {
  const u = await t.account();
  const c = await connected(u);
  oauthError(
    await token({
      grant_type: 'authorization_code',
      code: c.code,
      redirect_uri: REDIRECT,
      client_id: c.client,
      code_verifier: c.v,
    }),
    'invalid_grant',
    'a code again',
  );
  assert.is((await whoami(c.access_token)).statusCode, 401);
});

test('the code needs its verifier, client and redirect URI; an expired one is refused', async () => {
  const u = await t.account();
  const v = verifier();
  const { client, code } = await codeFor(u, v);
  const good = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: client, code_verifier: v };
  for (const [fields, why] of [
    [{ ...good, code_verifier: verifier() }, 'another verifier'],
    [{ ...good, code_verifier: 'short' }, 'a malformed verifier'],
    [{ ...good, client_id: await clientId('Other') }, 'another client'],
    [{ ...good, redirect_uri: 'http://127.0.0.1:1/other' }, 'another redirect URI'],
    [{ ...good, code: `${code}x` }, 'a wrong code'],
    [{ ...good, code: 'nonsense' }, 'a malformed code'],
  ] as const) {
    oauthError(await token(fields), 'invalid_grant', why);
  }
  oauthError(await token({ ...good, code: '' }), 'invalid_request', 'no code');
  oauthError(await token({ ...good, grant_type: 'password' }), 'unsupported_grant_type', 'a grant type we do not have');
  const res = await token(good);
  assert.is(res.statusCode, 200, 'the right one still works after the refusals');

  const late = await codeFor(u, v);
  await RequestContext.create(t.kernel.orm.em.fork(), () =>
    t.kernel.orm.em.nativeUpdate(
      AgentGrant,
      { id: late.code.split('.')[0] },
      { expiresAt: new Date(Date.now() - 1000) },
    ),
  );
  oauthError(await token({ ...good, code: late.code, client_id: late.client }), 'invalid_grant', 'an expired code');
});

test('a wrong password re-shows the page and grants nothing; deny goes back with access_denied', async () => {
  const u = await t.account();
  const client = await clientId();
  const wrong = await consent({
    ...authorizeQuery(client, verifier()),
    decision: 'allow',
    email: u.email,
    password: 'wrong password',
  });
  assert.is(wrong.statusCode, 401);
  assert.match(wrong.body, 'Invalid e-mail or password');
  assert.is(wrong.headers.location, undefined);
  const missing = await consent({ ...authorizeQuery(client, verifier()), decision: 'allow', email: u.email });
  assert.is(missing.statusCode, 400);
  const denied = await consent({ ...authorizeQuery(client, verifier()), decision: 'deny' });
  assert.is(denied.statusCode, 303);
  const back = new URL(denied.headers.location as string);
  assert.is(back.searchParams.get('error'), 'access_denied');
  assert.is(back.searchParams.get('state'), 'xyz');
  assert.is(back.searchParams.get('code'), null);
  assert.equal(await grantsOf(u.userId), [], 'no grant');
});

test('an unknown client or redirect URI is a page, never a redirect; other bad requests go back with one', async () => {
  const client = await clientId();
  for (const [query, why] of [
    [authorizeQuery('nope', verifier()), 'unknown client'],
    [
      authorizeQuery(
        `hoist-client.${Buffer.from('{"n":"x","r":["http://evil.example/"]}').toString('base64url')}`,
        verifier(),
      ),
      'a forged client with a refused redirect URI',
    ],
    [authorizeQuery(client, verifier(), { redirect_uri: 'https://evil.example/cb' }), 'an unregistered redirect URI'],
  ] as const) {
    const res = await t.app.inject({ method: 'GET', url: '/oauth/authorize', query });
    assert.is(res.statusCode, 400, why);
    assert.is(res.headers.location, undefined, why);
    assert.match(res.body, 'not valid', why);
  }
  for (const [extra, error, why] of [
    [{ code_challenge_method: 'plain' }, 'invalid_request', 'plain PKCE'],
    [{ code_challenge: '' }, 'invalid_request', 'no challenge'],
    [{ code_challenge: 'a'.repeat(128) }, 'invalid_request', 'a challenge no S256 makes'],
    [{ response_type: 'token' }, 'unsupported_response_type', 'the implicit flow'],
    [{ state: 'x'.repeat(1025) }, 'invalid_request', 'a state too long'],
  ] as const) {
    // A page with a link back, never a redirect: anyone may register a client (no open redirect on Hoist's address).
    const res = await t.app.inject({
      method: 'GET',
      url: '/oauth/authorize',
      query: authorizeQuery(client, verifier(), extra),
    });
    assert.is(res.statusCode, 400, why);
    assert.is(res.headers.location, undefined, why);
    const href = /<a href="([^"]+)">Return to http:\/\/127\.0\.0\.1:33418<\/a>/.exec(res.body);
    assert.ok(href, `${why}: ${res.body}`);
    const back = new URL(href[1].replace(/&#38;/g, '&'));
    assert.is(back.searchParams.get('error'), error, why);
  }
  const twice = await t.app.inject({
    method: 'GET',
    url: `/oauth/authorize?${form(authorizeQuery(client, verifier()))}&state=again`,
  });
  assert.is(twice.statusCode, 400, 'a state given twice');
  assert.match(twice.body, 'state is given more than once');
  assert.is(twice.headers.location, undefined);
  const port = await t.app.inject({
    method: 'GET',
    url: '/oauth/authorize',
    query: authorizeQuery(client, verifier(), { redirect_uri: 'http://127.0.0.1:5555/callback' }),
  });
  assert.is(port.statusCode, 200, 'a loopback redirect URI on another port (RFC 8252)');
});

test('registration refuses redirect URIs that are not https, loopback http or an app scheme', async () => {
  for (const [uris, why] of [
    [undefined, 'none'],
    [[], 'empty'],
    [['http://example.com/cb'], 'http off loopback'],
    [['javascript:alert(1)'], 'javascript'],
    [['data:text/html,hi'], 'data'],
    [['view-source:https://example.com/'], 'view-source'],
    [['ms-msdt:/id PCWDiagnostic'], 'an OS scheme'],
    [['intent://x#Intent;end'], 'intent'],
    [['x-unknown-scheme://cb'], 'a scheme of no app'],
    [['https://example.com/cb#frag'], 'a fragment'],
    [['https://user:pw@example.com/cb'], 'credentials'],
    [['not a uri'], 'not a URI'],
    [[`https://example.com/${'a'.repeat(600)}`], 'too long'],
    [Array.from({ length: 6 }, (_, i) => `https://example.com/${i}`), 'too many'],
  ] as const) {
    const res = await register({ client_name: 'x', redirect_uris: uris });
    oauthError(res, 'invalid_redirect_uri', why);
  }
  oauthError(
    await register({ client_name: 'x\u0007y', redirect_uris: [REDIRECT] }),
    'invalid_client_metadata',
    'a control character',
  );
  const nul = await register({ client_name: 'x\u0000y', redirect_uris: [REDIRECT] });
  assert.is(nul.statusCode, 400, 'a NUL is refused before anything reads the body, as on every route');
  oauthError(
    await register({ client_name: 'Claude \u202eedoC', redirect_uris: [REDIRECT] }),
    'invalid_client_metadata',
    'a right-to-left override',
  );
  oauthError(
    await register({ client_name: 'x'.repeat(101), redirect_uris: [REDIRECT] }),
    'invalid_client_metadata',
    'long',
  );
  oauthError(
    await register({ client_name: 'x', redirect_uris: [REDIRECT], grant_types: ['client_credentials'] }),
    'invalid_client_metadata',
    'a grant type we do not give',
  );
  for (const uri of [
    'https://example.com/cb',
    'cursor://anysphere.cursor-retrieval/oauth/callback',
    'com.example.agent:/oauth/callback',
    'http://[::1]:9/cb',
  ]) {
    assert.is((await register({ client_name: 'ok', redirect_uris: [uri] })).statusCode, 201, uri);
  }
});

test('revocation ends the grant from its refresh or access token; the user sees it gone', async () => {
  const u = await t.account();
  const one = await connected(u);
  const ok = await t.app.inject({
    method: 'POST',
    url: '/oauth/revoke',
    headers: FORM,
    payload: form({ token: one.refresh_token }),
  });
  assert.is(ok.statusCode, 200);
  assert.is((await whoami(one.access_token)).statusCode, 401);
  const two = await connected(u);
  await t.app.inject({
    method: 'POST',
    url: '/oauth/revoke',
    headers: FORM,
    payload: form({ token: two.access_token }),
  });
  assert.is((await whoami(two.access_token)).statusCode, 401);
  oauthError(await token({ grant_type: 'refresh_token', refresh_token: two.refresh_token }), 'invalid_grant', 'after');
  const unknown = await t.app.inject({
    method: 'POST',
    url: '/oauth/revoke',
    headers: FORM,
    payload: form({ token: 'nonsense' }),
  });
  assert.is(unknown.statusCode, 200, 'an unknown token is ignored (RFC 7009)');
  const listed = await t.app.inject({ method: 'GET', url: '/api/v1/auth/agent-tokens', headers: u.auth });
  assert.equal(listed.json().agent_tokens, []);
});

test("the user's revocation over REST and a password reset end OAuth grants too", async () => {
  const u = await t.account();
  const c = await connected(u);
  const id = decodeJwt(c.access_token).jti!;
  assert.is(
    (await t.app.inject({ method: 'DELETE', url: `/api/v1/auth/agent-tokens/${id}`, headers: u.auth })).statusCode,
    204,
  );
  assert.is((await whoami(c.access_token)).statusCode, 401);
  oauthError(await token({ grant_type: 'refresh_token', refresh_token: c.refresh_token }), 'invalid_grant', 'revoked');
});

test("the consent page's password is under the login limits: past them even the right one is 429", async () => {
  const u = await t.account();
  const client = await clientId();
  const attempt = (password: string) =>
    t.app.inject({
      method: 'POST',
      url: '/oauth/authorize',
      headers: FORM,
      remoteAddress: '192.0.2.77',
      payload: form({ ...authorizeQuery(client, verifier()), decision: 'allow', email: u.email, password }),
    });
  const max = t.kernel.config.loginMaxPerAccount;
  for (let i = 0; i < max; i++) assert.is((await attempt('wrong password')).statusCode, 401, `try ${i}`);
  const limited = await attempt(u.password);
  assert.is(limited.statusCode, 429);
  assert.ok(Number(limited.headers['retry-after']) > 0);
  assert.match(limited.body, 'Too many failed logins');
  assert.is(limited.headers.location, undefined);
  assert.equal(await grantsOf(u.userId), []);
});

test('the metadata URL in WWW-Authenticate cannot be broken out of by the Host header', async () => {
  const res = await t.app.inject({ method: 'POST', url: '/agent/v1/mcp', headers: { host: 'a"b\\c' }, payload: {} });
  assert.is(res.statusCode, 401);
  const header = res.headers['www-authenticate'] as string;
  assert.match(header, /^Bearer resource_metadata="[^"\\]+"$/);
});

test('browser-based clients: CORS on discovery, registration, tokens and MCP; not on consent or REST', async () => {
  const origin = 'https://inspector.example';
  const preflight = (url: string, method = 'POST') =>
    t.app.inject({
      method: 'OPTIONS',
      url,
      headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization' },
    });
  for (const url of ['/oauth/register', '/oauth/token', '/oauth/revoke', '/agent/v1/mcp']) {
    const res = await preflight(url);
    assert.is(res.statusCode, 204, url);
    assert.is(res.headers['access-control-allow-origin'], '*', url);
    assert.match(String(res.headers['access-control-allow-headers']), 'authorization', url);
  }
  const metadata = await t.app.inject({
    method: 'GET',
    url: '/.well-known/oauth-authorization-server',
    headers: { origin },
  });
  assert.is(metadata.statusCode, 200);
  assert.is(metadata.headers['access-control-allow-origin'], '*');
  // The MCP server's 401 tells a page where to get a token: the header is exposed to it.
  const refused = await t.app.inject({ method: 'POST', url: '/agent/v1/mcp', headers: { origin }, payload: {} });
  assert.is(refused.statusCode, 401);
  assert.is(refused.headers['access-control-allow-origin'], '*');
  assert.match(String(refused.headers['access-control-expose-headers']), 'www-authenticate');
  // The consent page and the REST API are not for other origins: no CORS header, preflights 404.
  for (const url of ['/oauth/authorize', '/api/v1/me', '/api/v1/projects/']) {
    const res = await preflight(url);
    assert.is(res.statusCode, 404, url);
    assert.is(res.headers['access-control-allow-origin'], undefined, url);
  }
  const me = await t.app.inject({ method: 'GET', url: '/api/v1/me', headers: { origin, ...a.auth } });
  assert.is(me.statusCode, 200);
  assert.is(me.headers['access-control-allow-origin'], undefined);
});

test('a pending consent (code not exchanged) is no token and is not listed', async () => {
  const u = await t.account();
  const { code } = await codeFor(u, verifier());
  const listed = await t.app.inject({ method: 'GET', url: '/api/v1/auth/agent-tokens', headers: u.auth });
  assert.equal(listed.json().agent_tokens, []);
  assert.is((await whoami(code)).statusCode, 401);
});

test.run();
