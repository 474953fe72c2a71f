// legs: db
import http from 'node:http';
import net from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { AbstractSqlConnection } from '@mikro-orm/knex';
import { AccessCode } from '../../core/entities/access-code.js';
import { Project } from '../../core/entities/project.js';
import { ACCESS_COOKIE } from '../../adapters/edge/access-gate.js';
import { ACCESS_COOKIES_TRIED } from '../../adapters/edge/edge-cookies.js';
import { PASSWORD_CHECKS_AT_ONCE } from '../../core/access/site-access-service.js';
import { PASSWORD_HASHER, type PasswordHasher } from '../../core/ports/password-hasher.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';
import { edgeRequest, mailFor, nextCode, setCookie, type EdgeAnswer } from '../helpers/site-gate.js';

const MAX = 8;
const PASSWORD = 'let me in, please';
let h: LiveHoist;
let token: string;
let site: { id: string; host: string };
let other: { id: string; host: string };
let app: { id: string; host: string };
let ip = 0;
/**
 * A client address of its own (the edge trusts X-Forwarded-For here), so rate limits of one test never touch another.
 */
const client = () => `10.0.${Math.floor(++ip / 250)}.${ip % 250}`;

// Echoes the request's cookie header and path; answers upgrades with 101 and a greeting.
const server = `
const http = require('http');
const s = http.createServer((req, res) => {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ app: true, path: req.url, cookie: req.headers.cookie || null }));
});
s.on('upgrade', (req, socket) => {
  socket.write(
    'HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n\\r\\n' +
      'hello from the app ' + (req.headers.cookie || 'no cookie'),
  );
});
s.listen(Number(process.env.PORT), '127.0.0.1');
`;

async function deploy(name: string, files: Record<string, string>, fields: Record<string, string>) {
  const res = await h.upload(token, '/api/v1/local-to-live', await zipOf(files), {
    name,
    visibility: 'private',
    ...fields,
  });
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  const op = await h.waitFor(token, body.operation.id, undefined, 90_000);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  return { id: body.project.id as string, host: hostOf(body.project.url) };
}

async function api(method: string, path: string, body?: object) {
  const res = await fetch(`${h.api}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: res.status === 204 ? null : await res.json() };
}

const get = (host: string, path: string, headers: Record<string, string> = {}) =>
  edgeRequest(h.edge, host, 'GET', path, { headers });
/** A gate form post from a page of `host` (right Origin) and its own client address unless given. */
const post = (host: string, path: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
  edgeRequest(h.edge, host, 'POST', `/.hoist/access/${path}`, {
    form,
    headers: { origin: `http://${host}`, 'x-forwarded-for': client(), ...headers },
  });
const cookieOf = (res: EdgeAnswer) => setCookie(res.cookies, ACCESS_COOKIE);
const withCookie = (value: string) => ({ cookie: `theme=dark; ${ACCESS_COOKIE}=${value}` });

/** Signs `email` in to `target` by code; returns the cookie value. */
async function signInByCode(target: { host: string }, email: string): Promise<string> {
  const known = (await mailFor(h.running.kernel, email)).length;
  assert.is((await post(target.host, 'email', { email, next: '/' })).status, 200);
  const { code } = await nextCode(h.running.kernel, email, known);
  const res = await post(target.host, 'code', { email, code, next: '/' });
  assert.is(res.status, 303, res.body);
  return cookieOf(res)!.value;
}

async function upgrade(host: string, headers: Record<string, string> = {}): Promise<string> {
  const edge = new URL(h.edge);
  return new Promise<string>((resolve, reject) => {
    const s = net.connect(Number(edge.port), edge.hostname, () => {
      const extra = Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('');
      s.write(
        `GET /socket HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: ` +
          `Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: ` +
          `13\r\n${extra}\r\n`,
      );
    });
    let data = '';
    const timer = setTimeout(() => reject(new Error(`no answer to the upgrade: ${data}`)), 15_000);
    s.on('data', (d) => {
      data += d;
      if (data.includes('hello from the app')) s.destroy();
    });
    s.on('close', () => {
      clearTimeout(timer);
      resolve(data);
    });
    s.on('error', () => {});
  });
}

test.before(async () => {
  // guest@example.com is mailed a code by many tests: past mailMaxPerRecipient it would get none.
  h = await liveHoist({ trustProxy: true, accessMaxAttempts: MAX, healthTimeoutSeconds: 20, mailMaxPerRecipient: 100 });
  ({ token } = await h.login('pro'));
  site = await deploy(
    'gated-site',
    { 'index.html': '<h1>the private site</h1>', 'asset.css': 'body{color:red}' },
    { access_password: PASSWORD },
  );
  other = await deploy('other-site', { 'index.html': '<h1>the other site</h1>' }, {});
  app = await deploy(
    'gated-app',
    { 'package.json': JSON.stringify({ name: 'gated-app', main: 'server.js' }), 'server.js': server },
    {},
  );
  for (const p of [site, other, app])
    assert.is((await api('POST', `/projects/${p.id}/access-grants`, { email: 'guest@example.com' })).status, 201);
});
test.after(async () => h?.close());

test(
  'without a cookie every URL answers the 401 sign-in page: pages, assets, app ' + 'paths, POSTs; upgrades are refused',
  async () => {
    for (const [host, path] of [
      [site.host, '/'],
      [site.host, '/asset.css'],
      [site.host, '/missing/page'],
      [app.host, '/api/data?x=1'],
    ]) {
      const res = await get(host, path);
      assert.is(res.status, 401, `${host}${path}`);
      assert.match(res.headers['content-type']!, /^text\/html/);
      assert.is(res.headers['cache-control'], 'no-store');
      assert.match(res.body, /<label for="gate-email">E-mail address<\/label>/);
      assert.match(res.body, /<form method="post" action="\/\.hoist\/access\/email">/);
      assert.match(res.body, new RegExp(`name="next" value="${path.replace(/[?.]/g, '\\$&')}"`));
      assert.not.match(res.body, /the private site|color:red|"app":true/);
    }
    assert.match(
      (await get(site.host, '/')).body,
      /action="\/\.hoist\/access\/password"/,
      'a project with a password offers it',
    );
    assert.not.match((await get(app.host, '/')).body, /password/i, 'a project without one does not');
    const head = await edgeRequest(h.edge, site.host, 'HEAD', '/asset.css');
    assert.is(head.status, 401);
    const posted = await edgeRequest(h.edge, app.host, 'POST', '/api/data', {
      body: '{"a":1}',
      headers: { 'content-type': 'application/json' },
    });
    assert.is(posted.status, 401);
    assert.not.match(posted.body, /"app":true/);
    const refused = await upgrade(app.host);
    assert.match(refused, /^HTTP\/1\.1 401/);
    assert.not.match(refused, /hello from the app/);
  },
);

test("the owner's API bearer token does not open the site", async () => {
  const res = await get(site.host, '/', { authorization: `Bearer ${token}` });
  assert.is(res.status, 401);
  const forged = await get(site.host, '/', withCookie(token));
  assert.is(forged.status, 401, 'a REST token is no access cookie either');
  assert.match(await upgrade(app.host, { authorization: `Bearer ${token}` }), /^HTTP\/1\.1 401/);
});

test('the gate path belongs to the gate even on a Node.js app', async () => {
  const res = await get(app.host, '/.hoist/access/?next=/somewhere');
  assert.is(res.status, 200);
  assert.match(res.body, /Sign in to gated-app/);
  assert.match(res.body, /name="next" value="\/somewhere"/);
  assert.is((await get(app.host, '/.hoist/access/else')).status, 404);
});

test(
  'code flow: mail with code and link, then a host-only HttpOnly SameSite cookie ' +
    'that opens pages, assets, the app and its WebSocket',
  async () => {
    const email = 'guest@example.com';
    const known = (await mailFor(h.running.kernel, email)).length;
    const asked = await post(app.host, 'email', { email: '  Guest@Example.com ', next: '/api/data?x=1' });
    assert.is(asked.status, 200);
    assert.match(asked.body, /<label for="gate-code">Code<\/label>/);
    const { code, link, mail } = await nextCode(h.running.kernel, email, known);
    assert.match(code, /^\d{6}$/);
    assert.match(mail.subject, /gated-app/);
    assert.ok(link.startsWith(`http://${app.host}/.hoist/access/link?`), link);
    const row = (await h.running.kernel.orm.em.fork().find(AccessCode, { projectId: app.id }))[0];
    assert.match(row.codeHash, /^hmac-sha256:[0-9a-f]{64}$/, 'the code is stored as a keyed HMAC');
    const minutes = (row.expiresAt.getTime() - Date.now()) / 60_000;
    assert.ok(minutes > 9 && minutes <= 10, `expires in ${minutes} min`);

    // The mailed link only fills the form in.
    const linked = new URL(link);
    const filled = await get(app.host, `${linked.pathname}${linked.search}`);
    assert.is(filled.status, 200);
    assert.match(filled.body, new RegExp(`name="code"[^>]*value="${code}"`));

    const res = await post(app.host, 'code', { email, code, next: '/api/data?x=1' });
    assert.is(res.status, 303);
    assert.is(res.headers.location, '/api/data?x=1');
    const cookie = cookieOf(res)!;
    assert.ok(cookie, res.cookies.join('\n'));
    const attrs = cookie.attributes.map((a) => a.toLowerCase());
    assert.ok(attrs.includes('httponly'));
    assert.ok(attrs.includes('samesite=lax'));
    assert.ok(attrs.includes('path=/'));
    assert.not.ok(
      attrs.some((a) => a.startsWith('domain')),
      'host-only',
    );
    assert.not.ok(attrs.includes('secure'), 'plain HTTP: no Secure');
    assert.ok(attrs.some((a) => a.startsWith('max-age=')));

    const page = await get(app.host, '/api/data?x=1', withCookie(cookie.value));
    assert.is(page.status, 200, page.body);
    const seen = JSON.parse(page.body);
    assert.is(seen.path, '/api/data?x=1');
    assert.is(seen.cookie, 'theme=dark', 'the app never sees the access cookie');
    // Nor on a kept-alive connection, whose later requests take the edge's hot path.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    for (let i = 0; i < 3; i++) {
      const again = await edgeRequest(h.edge, app.host, 'GET', '/api/data', {
        headers: withCookie(cookie.value),
        agent,
      });
      assert.is(JSON.parse(again.body).cookie, 'theme=dark', `request ${i + 1} on one connection`);
    }
    agent.destroy();
    const ws = await upgrade(app.host, withCookie(cookie.value));
    assert.match(ws, /^HTTP\/1\.1 101/);
    assert.match(ws, /hello from the app theme=dark/);

    // Used once: the same code does not open it again.
    assert.is((await post(app.host, 'code', { email, code, next: '/' })).status, 401);
  },
);

test('over HTTPS (X-Forwarded-Proto from a trusted proxy) the cookie is Secure', async () => {
  const email = 'guest@example.com';
  const known = (await mailFor(h.running.kernel, email)).length;
  await post(
    other.host,
    'email',
    { email, next: '/' },
    { 'x-forwarded-proto': 'https', origin: `https://${other.host}` },
  );
  const { code, link } = await nextCode(h.running.kernel, email, known);
  assert.ok(link.startsWith(`https://${other.host}/`), link);
  const res = await post(
    other.host,
    'code',
    { email, code, next: '/' },
    { 'x-forwarded-proto': 'https', origin: `https://${other.host}` },
  );
  assert.is(res.status, 303);
  assert.ok(
    cookieOf(res)!
      .attributes.map((a) => a.toLowerCase())
      .includes('secure'),
  );
});

test('a granted and a non-granted address get the same page, and only the granted one gets mail', async () => {
  const stranger = 'stranger@example.com';
  const granted = 'guest@example.com';
  const known = (await mailFor(h.running.kernel, granted)).length;
  const a = await post(site.host, 'email', { email: stranger, next: '/x' });
  const b = await post(site.host, 'email', { email: granted, next: '/x' });
  assert.is(a.status, 200);
  assert.is(b.status, 200);
  assert.is(a.body.replaceAll(stranger, '<email>'), b.body.replaceAll(granted, '<email>'));
  assert.equal(Object.keys(a.headers).sort(), Object.keys(b.headers).sort());
  // One project's mail goes out in order: once the granted one is there, the other request is done.
  await nextCode(h.running.kernel, granted, known);
  assert.is((await mailFor(h.running.kernel, stranger)).length, 0);
  const wrong = await post(site.host, 'code', { email: stranger, code: '123456', next: '/' });
  assert.is(wrong.status, 401);
});

test('a wrong code is refused; after five tries even the right one is', async () => {
  const email = 'guest@example.com';
  const known = (await mailFor(h.running.kernel, email)).length;
  const from = client();
  await post(site.host, 'email', { email, next: '/' }, { 'x-forwarded-for': from });
  const { code } = await nextCode(h.running.kernel, email, known);
  const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
  for (let i = 1; i <= 5; i++) {
    const res = await post(site.host, 'code', { email, code: wrong, next: '/' }, { 'x-forwarded-for': from });
    assert.is(res.status, 401, `try ${i}`);
    assert.match(res.body, /role="alert"/);
    assert.is(cookieOf(res), null);
  }
  const sixth = await post(site.host, 'code', { email, code, next: '/' });
  assert.is(sixth.status, 401, 'the sixth try is refused, right code or not');
  assert.is(cookieOf(sixth), null);
});

test('an expired code is refused', async () => {
  const email = 'guest@example.com';
  const known = (await mailFor(h.running.kernel, email)).length;
  await post(site.host, 'email', { email, next: '/' });
  const { code } = await nextCode(h.running.kernel, email, known);
  await h.running.kernel.orm.em
    .fork()
    .nativeUpdate(AccessCode, { projectId: site.id }, { expiresAt: new Date(Date.now() - 1000) });
  const res = await post(site.host, 'code', { email, code, next: '/' });
  assert.is(res.status, 401);
  assert.is(cookieOf(res), null);
});

test('a cookie of one project does not open another', async () => {
  const cookie = await signInByCode(site, 'guest@example.com');
  assert.is((await get(site.host, '/', withCookie(cookie))).status, 200);
  assert.is((await get(other.host, '/', withCookie(cookie))).status, 401);
  assert.is((await get(app.host, '/', withCookie(cookie))).status, 401);
});

test('removing the grant ends access at the next request', async () => {
  const email = 'leaving@example.com';
  const grant = await api('POST', `/projects/${site.id}/access-grants`, { email });
  const cookie = await signInByCode(site, email);
  const ok = await get(site.host, '/asset.css', withCookie(cookie));
  assert.is(ok.status, 200);
  assert.is(ok.body, 'body{color:red}');
  assert.is((await api('DELETE', `/projects/${site.id}/access-grants/${grant.body.id}`)).status, 204);
  assert.is((await get(site.host, '/asset.css', withCookie(cookie))).status, 401);
});

test('password flow: wrong is 401, right sets the cookie; a new password ends it', async () => {
  const wrong = await post(site.host, 'password', { password: 'not the password', next: '/' });
  assert.is(wrong.status, 401);
  assert.match(wrong.body, /role="alert"/);
  assert.is(cookieOf(wrong), null);
  const right = await post(site.host, 'password', { password: PASSWORD, next: '/asset.css' });
  assert.is(right.status, 303);
  assert.is(right.headers.location, '/asset.css');
  const cookie = cookieOf(right)!;
  assert.ok(cookie.attributes.map((a) => a.toLowerCase()).includes('httponly'));
  assert.is((await get(site.host, '/', withCookie(cookie.value))).status, 200);
  assert.is(
    (await post(app.host, 'password', { password: PASSWORD, next: '/' })).status,
    401,
    'no password on that project',
  );

  assert.is((await api('PATCH', `/projects/${site.id}/`, { access_password: 'a brand new password' })).status, 200);
  assert.is((await get(site.host, '/', withCookie(cookie.value))).status, 401);
  const again = await post(site.host, 'password', { password: 'a brand new password', next: '/' });
  assert.is(again.status, 303);
  assert.is((await api('PATCH', `/projects/${site.id}/`, { access_password: PASSWORD })).status, 200);
});

test('password and code attempts are rate-limited per client address: 429 page with Retry-After', async () => {
  const from = client();
  for (let i = 0; i < MAX; i++)
    assert.is(
      (await post(site.host, 'password', { password: `guess ${i}`, next: '/' }, { 'x-forwarded-for': from })).status,
      401,
    );
  const limited = await post(site.host, 'password', { password: PASSWORD, next: '/' }, { 'x-forwarded-for': from });
  assert.is(limited.status, 429);
  assert.ok(Number(limited.headers['retry-after']) >= 1);
  assert.match(limited.body, /Too many/);
  assert.is(cookieOf(limited), null);
  const code = await post(
    site.host,
    'code',
    { email: 'guest@example.com', code: '000000', next: '/' },
    { 'x-forwarded-for': from },
  );
  assert.is(code.status, 429, 'codes share the allowance');
  assert.is(
    (await post(site.host, 'password', { password: PASSWORD, next: '/' })).status,
    303,
    'another address is not limited',
  );
});

test('password guesses from the addresses of one IPv6 /64 share one allowance', async () => {
  for (let i = 1; i <= MAX; i++)
    assert.is(
      (
        await post(
          site.host,
          'password',
          { password: `guess ${i}`, next: '/' },
          { 'x-forwarded-for': `2001:db8:99:1::${i}` },
        )
      ).status,
      401,
    );
  const limited = await post(
    site.host,
    'password',
    { password: PASSWORD, next: '/' },
    { 'x-forwarded-for': '2001:db8:99:1::abc' },
  );
  assert.is(limited.status, 429);
  assert.is(cookieOf(limited), null);
  const other = await post(
    site.host,
    'password',
    { password: PASSWORD, next: '/' },
    { 'x-forwarded-for': '2001:db8:99:2::1' },
  );
  assert.is(other.status, 303, 'another /64 is another client');
});

test(
  'form posts: cross-site or missing Origin is 403, other content types 415, a bad ' + 'e-mail 400; nothing is mailed',
  async () => {
    const email = 'guest@example.com';
    const known = (await mailFor(h.running.kernel, email)).length;
    const foreign = await post(site.host, 'email', { email, next: '/' }, { origin: 'http://evil.example' });
    assert.is(foreign.status, 403);
    const none = await edgeRequest(h.edge, site.host, 'POST', '/.hoist/access/password', {
      form: { password: PASSWORD },
    });
    assert.is(none.status, 403);
    assert.is(cookieOf(none), null);
    const json = await edgeRequest(h.edge, site.host, 'POST', '/.hoist/access/password', {
      body: JSON.stringify({ password: PASSWORD }),
      headers: { 'content-type': 'application/json', origin: `http://${site.host}` },
    });
    assert.is(json.status, 415);
    const bad = await post(site.host, 'email', { email: 'not an address', next: '/' });
    assert.is(bad.status, 400);
    assert.match(bad.body, /aria-invalid="true"/);
    for (const form of [
      { email: `${email}\u0000`, next: '/' },
      { email, next: '/\u0000' },
    ]) {
      const nul = await post(site.host, 'email', form);
      assert.is(nul.status, 400);
      assert.match(nul.body, 'A form field holds the NUL character (U+0000)');
    }
    const nulPassword = await post(site.host, 'password', { password: `${PASSWORD}\u0000` });
    assert.is(nulPassword.status, 400);
    assert.is(cookieOf(nulPassword), null);
    assert.is((await mailFor(h.running.kernel, email)).length, known);
  },
);

test('after sign-in the redirect stays on the host: other sites and gate pages become /', async () => {
  for (const next of [
    '//evil.example/x',
    'https://evil.example/',
    '/\\evil.example',
    'javascript:alert(1)',
    '/.hoist/access/',
    '',
  ]) {
    const res = await post(site.host, 'password', { password: PASSWORD, next });
    assert.is(res.status, 303, next);
    assert.is(res.headers.location, '/', next);
  }
});

test('a project that is no longer active (deletion begun, routes not reloaded) is closed: 404', async () => {
  const em = h.running.kernel.orm.em.fork();
  // A direct write announces nothing: the edge's routing table still holds the project, as in the window between
  // a deletion's commit and the edge's reload.
  await em.nativeUpdate(Project, { id: other.id }, { status: 'deleting' });
  // The sign-in page shows a project as it was read within the last second.
  const shown = () => new Promise((r) => setTimeout(r, 1100));
  await shown();
  try {
    for (const path of ['/', '/.hoist/access/']) {
      const res = await get(other.host, path);
      assert.is(res.status, 404, path);
      assert.match(res.headers['content-type']!, /^text\/html/);
      assert.not.match(res.body, /the other site/);
    }
    assert.is((await post(other.host, 'password', { password: 'whatever', next: '/' })).status, 404);
  } finally {
    await em.nativeUpdate(Project, { id: other.id }, { status: 'active' });
  }
  await shown();
  assert.is((await get(other.host, '/')).status, 401, 'active again: the sign-in page');
});

test('a planted hoist_access cookie does not shadow the real one (gate and kept-alive hot path)', async () => {
  const signed = await post(site.host, 'password', { password: PASSWORD, next: '/' });
  const real = cookieOf(signed)!.value;
  const planted = (n: number) => Array.from({ length: n }, (_, i) => `${ACCESS_COOKIE}=planted${i}`).join('; ');
  const cookie = (before: number) => ({ cookie: `${planted(before)}; theme=dark; ${ACCESS_COOKIE}=${real}` });
  assert.is((await get(site.host, '/', cookie(1))).status, 200, 'planted first, real second');
  assert.is((await get(site.host, '/', { cookie: `${ACCESS_COOKIE}=${real}; ${planted(1)}` })).status, 200);
  // The token is known now: a kept-alive connection's requests take the hot path, which reads every value too.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (let i = 0; i < 3; i++) {
      const res = await edgeRequest(h.edge, site.host, 'GET', '/asset.css', { headers: cookie(2), agent });
      assert.is(res.status, 200, `request ${i + 1} on one connection`);
    }
  } finally {
    agent.destroy();
  }
  assert.is(
    (await get(site.host, '/', cookie(ACCESS_COOKIES_TRIED))).status,
    401,
    `only the first ${ACCESS_COOKIES_TRIED} values are tried`,
  );
});

test('password checks past the slots of the edge are answered at once: 503 page with Retry-After', async () => {
  const hasher = h.running.kernel.get<PasswordHasher>(PASSWORD_HASHER);
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  let waiting = 0;
  hasher.verify = async () => {
    waiting++;
    await opened;
    return false;
  };
  try {
    const running = Array.from({ length: PASSWORD_CHECKS_AT_ONCE }, () =>
      post(site.host, 'password', { password: 'a guess', next: '/' }),
    );
    while (waiting < PASSWORD_CHECKS_AT_ONCE) await new Promise((r) => setTimeout(r, 5));
    const busy = await Promise.race([
      post(site.host, 'password', { password: PASSWORD, next: '/' }),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('it waited for a slot')), 5000).unref()),
    ]);
    assert.is(busy.status, 503);
    assert.is(busy.headers['retry-after'], '1');
    assert.match(busy.headers['content-type']!, /^text\/html/);
    assert.match(busy.body, /Try again in a moment/);
    assert.is(cookieOf(busy), null);
    open();
    for (const res of await Promise.all(running)) assert.is(res.status, 401);
  } finally {
    open();
    delete (hasher as Partial<PasswordHasher>).verify;
  }
  assert.is((await post(site.host, 'password', { password: PASSWORD, next: '/' })).status, 303, 'slots given back');
});

test('visitors without a cookie, however many, cost one project read a second: the sign-in page', async () => {
  const knex = (h.running.kernel.orm.em.getConnection() as AbstractSqlConnection).getKnex();
  let reads = 0;
  const seen = (q: { sql: string }) => {
    if (/from [`"]projects[`"]/.test(q.sql)) reads++;
  };
  knex.on('query', seen);
  try {
    await new Promise((r) => setTimeout(r, 1100));
    const answers = await Promise.all(Array.from({ length: 30 }, () => get(other.host, '/')));
    assert.equal([...new Set(answers.map((a) => a.status))], [401]);
    assert.match(answers[0].body, /the other site|sign in/i);
  } finally {
    knex.off('query', seen);
  }
  assert.ok(reads >= 1 && reads <= 2, `${reads} reads of projects`);
});

test('a public project is not gated', async () => {
  assert.is((await api('PATCH', `/projects/${other.id}/`, { visibility: 'public' })).status, 200);
  try {
    const res = await get(other.host, '/');
    assert.is(res.status, 200);
    assert.match(res.body, /the other site/);
  } finally {
    await api('PATCH', `/projects/${other.id}/`, { visibility: 'private' });
  }
});

test('on a project made public its grants are dormant: its private previews open with the password alone', async () => {
  const dormant = await deploy('dormant-grants', { 'index.html': '<h1>dormant</h1>' }, { access_password: PASSWORD });
  const email = 'former-contractor@example.com';
  assert.is((await api('POST', `/projects/${dormant.id}/access-grants`, { email })).status, 201);
  const granted = await signInByCode(dormant, email);
  assert.is((await api('PATCH', `/projects/${dormant.id}/`, { visibility: 'public' })).status, 200);
  const up = await h.upload(token, `/api/v1/projects/${dormant.id}/local-to-live`, await zipOf({ 'index.html': 'p' }), {
    target: 'preview',
  });
  const preview = hostOf((await up.json()).preview.url);
  const listed = await api('GET', `/projects/${dormant.id}/access-grants`);
  assert.is(listed.body.in_effect, false);
  for (let i = 0; i < 100 && (await get(preview, '/')).status === 404; i++)
    await new Promise((r) => setTimeout(r, 100));
  // The grant's cookie does not open the preview, and no code is mailed for it.
  assert.is((await get(preview, '/', withCookie(granted))).status, 401);
  const mailed = (await mailFor(h.running.kernel, email)).length;
  assert.is((await post(preview, 'email', { email, next: '/' })).status, 200);
  await new Promise((r) => setTimeout(r, 300));
  assert.is((await mailFor(h.running.kernel, email)).length, mailed, 'no code mailed for a dormant grant');
  const right = await post(preview, 'password', { password: PASSWORD, next: '/' });
  assert.is(right.status, 303, right.body);
  assert.is((await get(preview, '/', withCookie(cookieOf(right)!.value))).body, 'p');
});

test(
  'Local-to-Live takes access_password only when it creates the project, and checks ' + 'it before creating anything',
  async () => {
    const zip = await zipOf({ 'index.html': 'x' });
    const short = await h.upload(token, '/api/v1/local-to-live', zip, {
      name: 'short-password',
      visibility: 'private',
      access_password: 'short',
    });
    assert.is(short.status, 400);
    const body = await short.json();
    assert.is(body.error.code, 'invalid_request');
    assert.is(body.error.details.field, 'access_password');
    const names = (await api('GET', '/projects/?limit=100')).body.projects.map((p: { name: string }) => p.name);
    assert.not.ok(names.includes('short-password'));

    const before = await h.running.kernel.orm.em.fork().findOneOrFail(Project, { id: site.id });
    const existing = await h.upload(token, '/api/v1/local-to-live', zip, {
      name: 'gated-site',
      access_password: 'a replacement password',
    });
    assert.is(existing.status, 400);
    assert.is((await existing.json()).error.details.field, 'access_password');
    const after = await h.running.kernel.orm.em.fork().findOneOrFail(Project, { id: site.id });
    assert.is(after.accessPasswordHash, before.accessPasswordHash);
  },
);

test.run();
