// legs: db
// Members of an account: an owner invites an address (a set-password token by mail), the member logs in and works
// on the account's projects; roles, removal (tokens refused at once), the last owner kept, the plan's cap, and every
// bad input refused with its error and nothing written.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AccessRequest } from '../../../core/entities/access-request.js';
import { OneTimeToken } from '../../../core/entities/one-time-token.js';
import { Operation } from '../../../core/entities/operation.js';
import { UploadSession } from '../../../core/entities/upload-session.js';
import { User } from '../../../core/entities/user.js';
import { testApi, type TestAccount, type TestApi } from '../../helpers/api.js';
import { zipOf } from '../../helpers/live.js';
import { mailTo, tokenIn } from '../../helpers/mail.js';
import { OutboxMail } from '../../../plugins/mailer-outbox/outbox-mail.js';
import { Form } from '../../helpers/raw-http.js';

let t: TestApi;
test.before(async () => {
  t = await testApi({ mailMaxPerRecipient: 3, mailMaxPerAddress: 100 });
});
test.after(async () => t?.close());

let n = 0;
const address = () => `member${++n}-${process.pid}@example.com`;
const call = (who: TestAccount | string | null, method: string, url: string, payload?: object) =>
  t.app.inject({
    method: method as 'GET',
    url: `/api/v1${url}`,
    headers: who ? { authorization: `Bearer ${typeof who === 'string' ? who : who.token}` } : {},
    ...(payload && { payload }),
  });
const usersOf = (accountId: string) =>
  t.inContext(() => t.kernel.orm.em.find(User, { accountId }, { orderBy: { createdAt: 'asc' } }));

/** Invites `email` as `owner` does, chooses its password with the mailed token and logs in: its token. */
async function join(owner: TestAccount, email: string, role?: string): Promise<{ id: string; token: string }> {
  const res = await call(owner, 'POST', '/account/members', { email, ...(role && { role }) });
  assert.is(res.statusCode, 201, res.body);
  const [mail] = await mailTo(t, email);
  assert.match(mail.subject, `${owner.email} invited you to`);
  const reset = await t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/password-recovery/reset',
    payload: { token: tokenIn(mail), password: 'the member password' },
  });
  assert.is(reset.statusCode, 204, reset.body);
  const login = await t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    payload: { email, password: 'the member password' },
  });
  assert.is(login.statusCode, 200, login.body);
  return { id: res.json().id, token: login.json().token };
}

test('an invited member chooses a password, logs in and works on the account: one account, two people', async () => {
  const owner = await t.account({ plan: 'pro' });
  const project = await call(owner, 'POST', '/projects/', { name: 'shared-site' });
  assert.is(project.statusCode, 201, project.body);
  const email = address();
  const invited = await call(owner, 'POST', '/account/members', { email: email.toUpperCase() });
  assert.is(invited.statusCode, 201, invited.body);
  assert.equal([invited.json().email, invited.json().role, invited.json().status], [email, 'member', 'invited']);
  // Invited again before it chose a password: a new token by mail, no second user.
  const again = await call(owner, 'POST', '/account/members', { email });
  assert.is(again.statusCode, 200, again.body);
  assert.is(again.json().id, invited.json().id);
  const mails = await mailTo(t, email);
  assert.is(mails.length, 2);
  assert.match(mails[0].text, 'POST http');
  assert.match(mails[0].text, '/api/v1/auth/password-recovery/reset');
  assert.match(mails[0].text, `Then log in with ${email} and that password (hoist login --api http`);
  assert.not.match(mails[0].text, 'If you did not ask for this');

  const reset = await t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/password-recovery/reset',
    payload: { token: tokenIn(mails[1]), password: 'the member password' },
  });
  assert.is(reset.statusCode, 204, reset.body);
  const login = await t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    payload: { email, password: 'the member password' },
  });
  const member = login.json().token as string;
  const me = (await call(member, 'GET', '/me')).json();
  assert.equal([me.account.id, me.user.role, me.user.email_verified], [owner.accountId, 'member', true]);
  assert.is((await call(owner, 'GET', '/me')).json().user.role, 'owner');
  const projects = (await call(member, 'GET', '/projects/')).json().projects;
  assert.equal(
    projects.map((p: { id: string }) => p.id),
    [project.json().id],
  );
  const list = (await call(member, 'GET', '/account/members')).json().members;
  assert.equal(
    list.map((m: any) => [m.email, m.role, m.status]),
    [
      [owner.email, 'owner', 'active'],
      [email, 'member', 'active'],
    ],
  );
});

test('only owners invite, change roles, remove others and rename the account: 403 and nothing changes', async () => {
  const owner = await t.account({ plan: 'pro' });
  const member = await join(owner, address());
  const before = await usersOf(owner.accountId);
  for (const [method, url, payload] of [
    ['POST', '/account/members', { email: address() }],
    ['PATCH', `/account/members/${owner.userId}`, { role: 'member' }],
    ['PATCH', `/account/members/${member.id}`, { role: 'owner' }],
    ['DELETE', `/account/members/${owner.userId}`],
    ['PATCH', '/me', { name: 'taken over' }],
  ] as const) {
    const res = await call(member.token, method, url, payload);
    assert.is(res.statusCode, 403, `${method} ${url}: ${res.body}`);
    assert.is(res.json().error.code, 'forbidden');
  }
  assert.equal(await usersOf(owner.accountId), before);
  assert.is.not((await call(owner, 'GET', '/me')).json().account.name, 'taken over');
});

test('a role change takes effect at once; the last owner is kept', async () => {
  const owner = await t.account({ plan: 'pro' });
  const member = await join(owner, address());
  const alone = await call(owner, 'PATCH', `/account/members/${owner.userId}`, { role: 'member' });
  assert.is(alone.statusCode, 409, alone.body);
  assert.is((await call(owner, 'DELETE', `/account/members/${owner.userId}`)).statusCode, 409);

  const promoted = await call(owner, 'PATCH', `/account/members/${member.id}`, { role: 'owner' });
  assert.is(promoted.statusCode, 200, promoted.body);
  assert.is(promoted.json().role, 'owner');
  // The member's next request sees it (the /me answer kept for the user is dropped).
  assert.is((await call(member.token, 'GET', '/me')).json().user.role, 'owner');
  assert.is((await call(member.token, 'POST', '/account/members', { email: address() })).statusCode, 201);
  // Two owners: the first may step down now, and then no longer manages members.
  assert.is((await call(owner, 'PATCH', `/account/members/${owner.userId}`, { role: 'member' })).statusCode, 200);
  assert.is((await call(owner, 'POST', '/account/members', { email: address() })).statusCode, 403);
});

test('a removed member is refused at once; a member may leave; the projects stay', async () => {
  const owner = await t.account({ plan: 'pro' });
  const project = (await call(owner, 'POST', '/projects/', { name: 'kept-site' })).json();
  const member = await join(owner, address());
  assert.is((await call(member.token, 'GET', '/projects/')).statusCode, 200);
  const removed = await call(owner, 'DELETE', `/account/members/${member.id}`);
  assert.is(removed.statusCode, 204, removed.body);
  const after = await call(member.token, 'GET', '/projects/');
  assert.is(after.statusCode, 401, 'its token is refused at once');
  assert.is(
    await t.inContext(() => t.kernel.orm.em.count(OneTimeToken, { userId: member.id })),
    0,
    'its tokens are gone',
  );
  assert.is((await call(owner, 'DELETE', `/account/members/${member.id}`)).statusCode, 404);
  assert.is((await call(owner, 'GET', `/projects/${project.id}`)).statusCode, 200);

  const leaving = await join(owner, address());
  assert.is((await call(leaving.token, 'DELETE', `/account/members/${leaving.id}`)).statusCode, 204);
  assert.is((await call(leaving.token, 'GET', '/me')).statusCode, 401);
  assert.equal(
    (await usersOf(owner.accountId)).map((u) => u.id),
    [owner.userId],
  );
});

test("a removed member's open upload URLs expire at once: refused as expired (410), nothing deployed", async () => {
  const owner = await t.account({ plan: 'pro' });
  const project = (await call(owner, 'POST', '/projects/', { name: 'upload-site' })).json();
  const member = await join(owner, address());
  const open = async (who: TestAccount | string, body: object) => {
    const res = await call(who, 'POST', '/upload-sessions', { project_id: project.id, ...body });
    assert.is(res.statusCode, 201, res.body);
    return { id: res.json().id as string, path: new URL(res.json().upload_url).pathname };
  };
  const multipart = await open(member.token, {});
  const resumable = await open(member.token, { transport: 'direct_storage_resumable', size: 1_000_000 });
  const owners = await open(owner, {});
  const sessions = () =>
    t.inContext(() => t.kernel.orm.em.find(UploadSession, { id: { $in: [multipart.id, resumable.id, owners.id] } }));
  const byId = new Map((await sessions()).map((s) => [s.id, s]));
  assert.equal(
    [multipart.id, resumable.id, owners.id].map((id) => byId.get(id)!.userId),
    [member.id, member.id, owner.userId],
    'each session records who opened it',
  );
  const zip = await zipOf({ 'index.html': '<h1>from a removed member</h1>' });
  const piece = Buffer.alloc(1024, 1);
  const patch = (path: string) =>
    t.app.inject({
      method: 'PATCH',
      url: path,
      headers: {
        'tus-resumable': '1.0.0',
        'content-type': 'application/offset+octet-stream',
        'upload-offset': '0',
      },
      payload: piece,
    });
  assert.is((await patch(resumable.path)).statusCode, 204, 'a piece arrives while the member is one');

  assert.is((await call(owner, 'DELETE', `/account/members/${member.id}`)).statusCode, 204);
  const send = (path: string) => {
    const form = new Form();
    return t.app.inject({
      method: 'POST',
      url: path,
      headers: { 'content-type': form.contentType },
      payload: form.body([['file', zip, 'site.zip']]),
    });
  };
  for (const [what, res] of [
    ['multipart', await send(multipart.path)],
    ['resumable', await patch(resumable.path)],
  ] as const) {
    assert.is(res.statusCode, 410, `${what}: ${res.body}`);
    assert.is(res.json().error.code, 'gone', what);
  }
  const after = new Map((await sessions()).map((s) => [s.id, s]));
  for (const id of [multipart.id, resumable.id]) {
    assert.ok(after.get(id)!.expiresAt < byId.get(id)!.expiresAt, 'expired at removal');
    assert.is(after.get(id)!.usedAt, null, 'never used');
  }
  assert.equal(after.get(owners.id)!.expiresAt, byId.get(owners.id)!.expiresAt, "the owner's session stays open");
  const deployments = () => t.inContext(() => t.kernel.orm.em.count(Operation, { projectId: project.id }));
  assert.is(await deployments(), 0, 'nothing is deployed');

  // The owner's URL works on: only what the removed member opened expired.
  const theirs = await send(owners.path);
  assert.is(theirs.statusCode, 202, theirs.body);
  assert.is(await deployments(), 1);
});

test('bad input, taken addresses, other accounts and the plan cap are refused, and nothing is written', async () => {
  const owner = await t.account({ plan: 'free' });
  const other = await t.account({ plan: 'pro' });
  const cases: [object, number, string, string?][] = [
    [{}, 400, 'invalid_request'],
    [{ email: 'not-an-address' }, 400, 'invalid_request', 'email'],
    [{ email: 42 }, 400, 'invalid_request'],
    [{ email: address(), role: 'admin' }, 400, 'invalid_request'],
    [{ email: address(), extra: true }, 400, 'invalid_request'],
    // An address with an account, this one's or another's: one address, one account.
    [{ email: other.email }, 409, 'conflict', 'email'],
    [{ email: owner.email }, 409, 'conflict', 'email'],
    // The free plan has room for its owner only.
    [{ email: address() }, 403, 'plan_restricted'],
  ];
  for (const [payload, status, code, field] of cases) {
    const res = await call(owner, 'POST', '/account/members', payload);
    assert.is(res.statusCode, status, `${JSON.stringify(payload)}: ${res.body}`);
    assert.is(res.json().error.code, code);
    if (field) assert.is(res.json().error.details.field, field);
  }
  assert.is((await usersOf(owner.accountId)).length, 1);
  assert.is((await usersOf(other.accountId)).length, 1);

  // Another account's member, a malformed id, a bad role: 404, 404, 400.
  for (const [method, url, payload, status] of [
    ['PATCH', `/account/members/${other.userId}`, { role: 'member' }, 404],
    ['DELETE', `/account/members/${other.userId}`, undefined, 404],
    ['DELETE', '/account/members/not-a-uuid', undefined, 404],
    ['PATCH', `/account/members/${owner.userId}`, { role: 'admin' }, 400],
  ] as const) {
    const res = await call(owner, method, url, payload);
    assert.is(res.statusCode, status, `${method} ${url}: ${res.body}`);
  }
  assert.is((await usersOf(other.accountId))[0].role, 'owner');
  assert.is((await call(null, 'GET', '/account/members')).statusCode, 401);
});

test('an address a mailer reads as address syntax is refused (400): no user, no mail to its mailbox', async () => {
  const owner = await t.account({ plan: 'pro' });
  const victim = address();
  // Each one was another address to Hoist (its own user and mail limit) and `victim` to the SMTP relay; the last
  // one mailed `root`, a local user of the relay.
  for (const email of [
    `${victim},`,
    `${victim};`,
    `<${victim}>`,
    `x,${victim}`,
    `g:${victim};`,
    `"x"${victim}`,
    `x@example.com<root>`,
    `${victim}(x)`,
    `.${victim}`,
    `${victim}.`,
  ]) {
    const res = await call(owner, 'POST', '/account/members', { email });
    assert.is(res.statusCode, 400, `${email}: ${res.body}`);
    assert.is(res.json().error.details.field, 'email');
  }
  assert.is((await usersOf(owner.accountId)).length, 1);
  const mailed = await t.inContext(() =>
    t.kernel.orm.em.find(OutboxMail, { to: { $like: `%${victim.split('@')[0]}%` } }),
  );
  assert.is(mailed.length, 0);
  for (const email of [victim, `first.o'neil+hoist_{1}@sub-domain.example.co.uk`]) {
    const res = await call(owner, 'POST', '/account/members', { email });
    assert.is(res.statusCode, 201, `${email}: ${res.body}`);
  }
});

test('invitations to one address are limited (429) and mail no more', async () => {
  const owner = await t.account({ plan: 'team' });
  const email = address();
  for (let i = 0; i < 3; i++)
    assert.is((await call(owner, 'POST', '/account/members', { email })).statusCode, i === 0 ? 201 : 200);
  const limited = await call(owner, 'POST', '/account/members', { email });
  assert.is(limited.statusCode, 429, limited.body);
  assert.is(limited.json().error.code, 'rate_limited');
  assert.is((await mailTo(t, email)).length, 3);
});

test('an account name with line breaks, and long names, give a one-line invitation subject', async () => {
  const owner = await t.account({ plan: 'pro', email: `${'o'.repeat(120)}-${process.pid}@example.com` });
  const name = `Acme\r\nBcc: spy@evil.example\r\nX-Injected: 1 ${'A'.repeat(150)}`;
  assert.is((await call(owner, 'PATCH', '/me', { name })).statusCode, 200);
  const email = address();
  const res = await call(owner, 'POST', '/account/members', { email });
  assert.is(res.statusCode, 201, res.body);
  const [mail] = await mailTo(t, email);
  assert.not.match(mail.subject, /[\r\n]/);
  assert.ok(mail.subject.length <= 300, `${mail.subject.length} characters`);
  assert.match(mail.subject, /^o+… invited you to Acme Bcc: spy@evil\.example X-Injected: 1 A+… on Hoist$/);
  assert.match(mail.text, JSON.stringify(name));
});

test('an invitation nobody accepted within 7 days no longer holds its address', async () => {
  const squatter = await t.account({ plan: 'pro' });
  const email = address();
  const res = await call(squatter, 'POST', '/account/members', { email });
  assert.is(res.statusCode, 201, res.body);
  const em = () => t.kernel.orm.em.fork();
  const eightDaysAgo = new Date(Date.now() - 8 * 24 * 3600 * 1000);
  // Within the 7 days it holds the address: another owner is told so.
  const other = await t.account({ plan: 'pro' });
  assert.is((await call(other, 'POST', '/account/members', { email })).statusCode, 409);
  await em().nativeUpdate(User, { id: res.json().id }, { invitedAt: eightDaysAgo });
  const listed = (await call(squatter, 'GET', '/account/members')).json().members;
  assert.equal(
    listed.map((m: any) => [m.email, m.status]),
    [
      [squatter.email, 'active'],
      [email, 'expired'],
    ],
  );
  // Then the address is free: another account's invitation takes it...
  const taken = await call(other, 'POST', '/account/members', { email });
  assert.is(taken.statusCode, 201, taken.body);
  assert.equal(
    (await usersOf(squatter.accountId)).map((u) => u.email),
    [squatter.email],
  );
  // ...and so does an access request once that one lapsed too.
  await em().nativeUpdate(User, { id: taken.json().id }, { invitedAt: eightDaysAgo });
  const asked = await t.app.inject({ method: 'POST', url: '/api/v1/access-requests', payload: { email } });
  assert.is(asked.statusCode, 202, asked.body);
  assert.is(await em().count(User, { email }), 0);
  assert.is(await em().count(OneTimeToken, { userId: taken.json().id }), 0);
  assert.is(await em().count(AccessRequest, { email }), 1, 'the request is stored');
});

test('invitations from one account are limited whatever the client address (429), and mail no more', async () => {
  const small = await testApi({ mailMaxPerAddress: 3 });
  try {
    const owner = await small.account({ plan: 'pro' });
    const invite = (i: number) =>
      small.app.inject({
        method: 'POST',
        url: '/api/v1/account/members',
        headers: owner.auth,
        remoteAddress: `2001:db8::${i}`,
        payload: { email: `flood${i}-${process.pid}@example.net` },
      });
    for (let i = 1; i <= 3; i++) {
      const res = await invite(i);
      assert.is(res.statusCode, 201, res.body);
      const removed = await small.app.inject({
        method: 'DELETE',
        url: `/api/v1/account/members/${res.json().id}`,
        headers: owner.auth,
      });
      assert.is(removed.statusCode, 204);
    }
    const limited = await invite(4);
    assert.is(limited.statusCode, 429, limited.body);
    assert.is(limited.json().error.code, 'rate_limited');
    assert.is(await small.inContext(() => small.kernel.orm.em.count(User, { accountId: owner.accountId })), 1);
    assert.equal(await mailTo(small, `flood4-${process.pid}@example.net`), []);
  } finally {
    await small.close();
  }
});

test.run();
