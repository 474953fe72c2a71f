// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AccessGrant } from '../../../core/entities/access-grant.js';
import { AccessRequest } from '../../../core/entities/access-request.js';
import { Account } from '../../../core/entities/account.js';
import { OneTimeToken } from '../../../core/entities/one-time-token.js';
import { OutboxMail } from '../../../plugins/mailer-outbox/outbox-mail.js';
import { Project } from '../../../core/entities/project.js';
import { RateHit } from '../../../core/entities/rate-hit.js';
import { Session } from '../../../core/entities/session.js';
import { nulPath } from '../../../adapters/http/refuse-nul.js';
import { testApi, type TestApi } from '../../helpers/api.js';
import { zipOf } from '../../helpers/live.js';
import { footprint, Form, rawRequest } from '../../helpers/raw-http.js';

// U+0000 used to reach the database: PostgreSQL refuses it in text (a 500), SQLite cuts the string at it.
let t: TestApi;
test.before(async () => {
  t = await testApi();
});
test.after(async () => t?.close());

const NUL = '\u0000';
const count = (
  entity: Parameters<ReturnType<typeof t.kernel.orm.em.fork>['count']>[0],
  where: Record<string, unknown> = {},
) => t.kernel.orm.em.fork().count(entity, where);

/** The answer is 400 invalid_request naming `field`. */
function refused(res: { statusCode: number; body: string; json(): any }, field: string) {
  assert.is(res.statusCode, 400, res.body);
  const { error } = res.json();
  assert.is(error.code, 'invalid_request');
  assert.is(error.details.field, field);
  assert.match(error.message, `${field} must not contain the NUL character (U+0000)`);
  assert.ok(error.request_id);
}

test('a body nested hundreds of thousands of levels deep is a 400, not a stack overflow (500)', async () => {
  for (const [open, close, depth] of [
    ['[', ']', 400_000],
    ['{"a":', '}', 150_000],
  ] as const) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      headers: { 'content-type': 'application/json' },
      payload: open.repeat(depth) + '"x"' + close.repeat(depth),
    });
    assert.is(res.statusCode, 400, res.body.slice(0, 300));
    assert.is(res.json().error.code, 'invalid_request');
  }
  // A NUL at the bottom is still found, and named; the first one in order, a key's included.
  assert.is(nulPath(JSON.parse('['.repeat(100_000) + '"x\\u0000"' + ']'.repeat(100_000))), `${'0.'.repeat(99_999)}0`);
  assert.is(nulPath({ a: ['ok', { b: `x${NUL}` }], c: NUL }), 'a.1.b');
  assert.is(nulPath({ a: 'ok', [`k${NUL}`]: 'v', z: NUL }), 'k\\u0000');
  assert.is(nulPath({ a: [1, null, { b: 'fine' }] }), null);
});

test(
  'login: a NUL in the e-mail or the password is 400 naming it, and nothing is ' +
    'counted or stored (no login needed)',
  async () => {
    const a = await t.account();
    const buckets = await count(RateHit);
    const sessions = await count(Session);
    for (const [payload, field] of [
      [{ email: `${a.email}${NUL}`, password: a.password }, 'email'],
      [{ email: `x${NUL}@example.com`, password: 'whatever it is' }, 'email'],
      [{ email: a.email, password: `${a.password}${NUL}` }, 'password'],
    ] as const) {
      refused(await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload }), field);
    }
    assert.is(await count(RateHit), buckets, 'no attempt was counted');
    assert.is(await count(Session), sessions, 'no session was opened');
    // The right password still works.
    assert.is(
      (
        await t.app.inject({
          method: 'POST',
          url: '/api/v1/auth/login',
          payload: { email: a.email, password: a.password },
        })
      ).statusCode,
      200,
    );
  },
);

test('password recovery and its reset: a NUL is 400 naming the field; no mail, no token', async () => {
  const a = await t.account();
  const mails = await count(OutboxMail);
  refused(
    await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/password-recovery',
      payload: { email: `${a.email}${NUL}` },
    }),
    'email',
  );
  refused(
    await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/password-recovery',
      payload: { email: `nobody${NUL}@example.com` },
    }),
    'email',
  );
  refused(
    await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/password-recovery/reset',
      payload: { token: `t${NUL}`, password: 'a new password' },
    }),
    'token',
  );
  assert.is(await count(OutboxMail), mails);
  assert.is(await count(OneTimeToken, { userId: a.userId }), 0);
});

test('access requests: a NUL in the e-mail, the name or the message is 400 naming it; nothing is stored', async () => {
  for (const [payload, field] of [
    [{ email: `new${NUL}@example.com` }, 'email'],
    [{ email: 'new@example.com', name: `Ann${NUL}` }, 'name'],
    [{ email: 'new@example.com', message: `please${NUL}` }, 'message'],
  ] as const) {
    refused(await t.app.inject({ method: 'POST', url: '/api/v1/access-requests', payload }), field);
  }
  assert.is(await count(AccessRequest), 0);
});

test('PATCH /me: a NUL in the name is 400 and the name stays', async () => {
  const a = await t.account();
  const before = (await t.kernel.orm.em.fork().findOneOrFail(Account, { id: a.accountId })).name;
  refused(
    await t.app.inject({ method: 'PATCH', url: '/api/v1/me', headers: a.auth, payload: { name: `Evil${NUL}Corp` } }),
    'name',
  );
  assert.is((await t.kernel.orm.em.fork().findOneOrFail(Account, { id: a.accountId })).name, before);
});

test(
  'projects: a NUL in a JSON field, a query string or a path parameter is 400 ' + 'naming it; nothing is created',
  async () => {
    const a = await t.account();
    refused(
      await t.app.inject({
        method: 'POST',
        url: '/api/v1/projects/',
        headers: a.auth,
        payload: { name: `site${NUL}` },
      }),
      'name',
    );
    refused(
      await t.app.inject({
        method: 'POST',
        url: '/api/v1/projects/',
        headers: a.auth,
        payload: { name: 'site', build_command: `npm run build${NUL}` },
      }),
      'build_command',
    );
    assert.is(await count(Project, { accountId: a.accountId }), 0);
    refused(await t.app.inject({ method: 'GET', url: '/api/v1/projects/?cursor=%00', headers: a.auth }), 'cursor');
    refused(await t.app.inject({ method: 'GET', url: '/api/v1/projects/ab%00cd/', headers: a.auth }), 'projectID');

    // A path parameter that is looked up as text: an access grant by e-mail.
    const pro = await t.account({ plan: 'pro' });
    const p = await t.app.inject({
      method: 'POST',
      url: '/api/v1/projects/',
      headers: pro.auth,
      payload: { name: 'private', visibility: 'private' },
    });
    assert.is(p.statusCode, 201, p.body);
    const grant = await t.app.inject({
      method: 'POST',
      url: `/api/v1/projects/${p.json().id}/access-grants`,
      headers: pro.auth,
      payload: { email: 'friend@example.com' },
    });
    assert.is(grant.statusCode, 201, grant.body);
    refused(
      await t.app.inject({
        method: 'DELETE',
        url: `/api/v1/projects/${p.json().id}/access-grants/friend%00@example.com`,
        headers: pro.auth,
      }),
      'grantID',
    );
    refused(
      await t.app.inject({
        method: 'POST',
        url: `/api/v1/projects/${p.json().id}/access-grants`,
        headers: pro.auth,
        payload: { email: `other${NUL}@example.com` },
      }),
      'email',
    );
    assert.is(await count(AccessGrant), 1);
    // An environment value (a process could never get it), and an object key.
    refused(
      await t.app.inject({
        method: 'PUT',
        url: `/api/v1/projects/${p.json().id}/environment/API_KEY`,
        headers: pro.auth,
        payload: { value: `sk${NUL}live` },
      }),
      'value',
    );
    refused(
      await t.app.inject({
        method: 'POST',
        url: '/api/v1/projects/',
        headers: pro.auth,
        payload: { [`na${NUL}me`]: 'x' },
      }),
      'na\\u0000me',
    );
  },
);

test(
  'Local-to-Live: a NUL in a multipart text part or the file name is 400 naming it; ' +
    'no project, upload or version is left',
  async () => {
    const a = await t.account();
    const zip = await zipOf({ 'index.html': '<h1>hi</h1>' });
    const before = await footprint(t.kernel);
    // The name after the file: the ZIP is already in storage when the part is refused.
    const cases: [[string, Buffer | string, string?][], string][] = [
      [
        [
          ['file', zip, 'site.zip'],
          ['name', `my${NUL}site`],
        ],
        'name',
      ],
      [
        [
          ['name', 'my-site'],
          ['visibility', `public${NUL}`],
          ['file', zip, 'site.zip'],
        ],
        'visibility',
      ],
      [
        [
          ['name', 'my-site'],
          ['file', zip, `site${NUL}.zip`],
        ],
        'file',
      ],
    ];
    for (const [parts, field] of cases) {
      const form = new Form();
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/local-to-live',
        headers: { ...a.auth, 'content-type': form.contentType },
        payload: form.body(parts),
      });
      refused(res, field);
    }
    assert.equal(await footprint(t.kernel), before);
  },
);

test('a header holding a NUL never reaches a route: Node refuses the request, and no session is opened', async () => {
  const a = await t.account();
  const sessions = await count(Session, { userId: a.userId });
  const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  const body = JSON.stringify({ email: a.email, password: a.password });
  const conn = await rawRequest(base, 'POST', '/api/v1/auth/login', {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'user-agent': `curl${NUL}evil`,
  });
  await conn.write(body);
  const res = await conn.response;
  conn.socket.destroy();
  assert.is(res.status, 400);
  assert.is(await count(Session, { userId: a.userId }), sessions);
});

test.run();
