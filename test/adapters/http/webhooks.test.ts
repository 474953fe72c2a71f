// legs: db
// Webhook routes with Hoist's default configuration (no private addresses): every bad input answers its error and
// stores nothing; another account's project or webhook is not found; the plan caps webhooks per project.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { RequestContext } from '@mikro-orm/core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { WEBHOOK_SERVICE, type WebhookService } from '../../../core/webhooks/webhook-service.js';
import { liveHoist, type LiveHoist } from '../../helpers/live.js';
import { liveMember } from '../../helpers/live-member.js';

let h: LiveHoist;
let pro: string;
let other: string;

test.before(async () => {
  h = await liveHoist();
  ({ token: pro } = await h.login('pro'));
  ({ token: other } = await h.login('pro'));
});
test.after(async () => h?.close());

const call = (token: string, method: string, path: string, body?: unknown) =>
  h.call(token, method, `/api/v1${path}`, body);

const newProject = async (token: string, name: string) =>
  (await call(token, 'POST', '/projects/', { name })).body.id as string;
const rowCount = async (table: string) =>
  Number((await h.running.kernel.orm.em.fork().getConnection().execute(`select count(*) as n from ${table}`))[0].n);

test('a bad url or events answers 400 naming the field, and stores nothing', async () => {
  const id = await newProject(pro, 'hooks-bad-input');
  const before = await rowCount('webhooks');
  const cases: [unknown, string, RegExp][] = [
    [{}, 'url', /url/],
    [{ url: '' }, 'url', /required/],
    [{ url: 'not a url' }, 'url', /not a URL/],
    [{ url: 'ftp://example.com/hook' }, 'url', /http or https/],
    [{ url: 'javascript:alert(1)' }, 'url', /http or https/],
    [{ url: 'https://user:pw@example.com/hook' }, 'url', /user name or password/],
    [{ url: 'http://127.0.0.1:9000/hook' }, 'url', /127\.0\.0\.1.*not a public address/],
    [{ url: 'http://169.254.169.254/latest/meta-data/' }, 'url', /not a public address/],
    [{ url: 'http://[::1]/hook' }, 'url', /not a public address/],
    [{ url: 'http://[::ffff:10.0.0.1]/hook' }, 'url', /not a public address/],
    [{ url: 'http://10.1.2.3/hook' }, 'url', /not a public address/],
    [{ url: 'http://localhost:3000/hook' }, 'url', /not a public host name/],
    [{ url: 'http://api.localhost/hook' }, 'url', /not a public host name/],
    [{ url: 'http://postgres:5432/' }, 'url', /not a public host name/],
    [{ url: `https://example.com/${'a'.repeat(2048)}` }, 'url', /2048/],
    [{ url: 'https://example.com/hook', events: [] }, 'events', /events/],
    [{ url: 'https://example.com/hook', events: ['deployment.created'] }, 'events', /deployment\.created/],
    [{ url: 'https://example.com/hook', events: { 'deployment.failed': true } }, '', /events/],
    [{ url: 'http://localhost.:3000/hook' }, 'url', /not a public host name/],
    [{ url: 'http://LOCALHOST/hook' }, 'url', /not a public host name/],
    [{ url: 'http://0x7f.1/hook' }, 'url', /not a public address/],
    [{ url: 'https://example.com/hook', secret: 'mine' }, '', /secret/],
    [{ url: 42 }, 'url', /url/],
  ];
  for (const [body, field, message] of cases) {
    const res = await call(pro, 'POST', `/projects/${id}/webhooks`, body);
    assert.is(res.status, 400, JSON.stringify(body));
    assert.is(res.body.error.code, 'invalid_request', JSON.stringify(body));
    assert.match(res.body.error.message, message, JSON.stringify(body));
    if (field && res.body.error.details.field) assert.is(res.body.error.details.field, field);
  }
  assert.is(await rowCount('webhooks'), before, 'nothing stored');
  assert.equal((await call(pro, 'GET', `/projects/${id}/webhooks`)).body.webhooks, []);
});

test("another account's project or webhook answers 404; an unknown webhook too; limit out of range 400", async () => {
  const id = await newProject(pro, 'hooks-owned');
  const hook = await call(pro, 'POST', `/projects/${id}/webhooks`, { url: 'https://hooks.example.com/in' });
  assert.is(hook.status, 201);
  for (const [method, path, body] of [
    ['GET', `/projects/${id}/webhooks`],
    ['POST', `/projects/${id}/webhooks`, { url: 'https://attacker.example.com/' }],
    ['DELETE', `/projects/${id}/webhooks/${hook.body.id}`],
    ['POST', `/projects/${id}/webhooks/${hook.body.id}/ping`],
    ['GET', `/projects/${id}/webhooks/${hook.body.id}/deliveries`],
  ] as [string, string, unknown?][]) {
    const res = await call(other, method, path, body);
    assert.is(res.status, 404, `${method} ${path}`);
    assert.is(res.body.error.code, 'not_found');
  }
  const mine = await newProject(other, 'hooks-theirs');
  for (const path of [
    `/projects/${mine}/webhooks/${hook.body.id}`,
    `/projects/${id}/webhooks/00000000-0000-4000-8000-000000000000`,
    `/projects/${id}/webhooks/not-a-uuid`,
  ])
    assert.is((await call(pro, 'DELETE', path)).status, 404, path);
  assert.is((await call(other, 'DELETE', `/projects/${mine}/webhooks/${hook.body.id}`)).status, 404);
  for (const limit of ['0', '101', 'x'])
    assert.is(
      (await call(pro, 'GET', `/projects/${id}/webhooks/${hook.body.id}/deliveries?limit=${limit}`)).status,
      400,
      limit,
    );
  assert.equal(
    (await call(pro, 'GET', `/projects/${id}/webhooks`)).body.webhooks.map((w: { id: string }) => w.id),
    [hook.body.id],
    'still there',
  );
});

test('the plan caps webhooks per project: 403 plan_restricted past it, nothing stored', async () => {
  const { token: free } = await h.login('free');
  const id = await newProject(free, 'hooks-free');
  for (const n of [1, 2])
    assert.is(
      (await call(free, 'POST', `/projects/${id}/webhooks`, { url: `https://hooks.example.com/${n}` })).status,
      201,
    );
  const third = await call(free, 'POST', `/projects/${id}/webhooks`, { url: 'https://hooks.example.com/3' });
  assert.is(third.status, 403);
  assert.is(third.body.error.code, 'plan_restricted');
  assert.is(third.body.error.details.feature ?? third.body.error.feature, 'webhooks_per_project');
  assert.is((await call(free, 'GET', `/projects/${id}/webhooks`)).body.webhooks.length, 2);
  const limits = (await call(free, 'GET', '/billing/entitlements')).body.limits;
  assert.is(limits.webhooks_per_project, 2);
});

test('a webhook whose host leads inside when it is tried fails with address_refused; nothing is posted', async () => {
  // As if the name's DNS records changed after the check: the stored URL now leads to this host's loopback.
  let connections = 0;
  const inside = http.createServer((_req, res) => res.end('inside')).on('connection', () => connections++);
  await new Promise<void>((r) => inside.listen(0, '127.0.0.1', r));
  try {
    const id = await newProject(pro, 'hooks-rebind');
    const hook = await call(pro, 'POST', `/projects/${id}/webhooks`, { url: 'https://hooks.example.com/in' });
    assert.is(hook.status, 201);
    const url = `http://127.0.0.1:${(inside.address() as AddressInfo).port}/`;
    await h.running.kernel.orm.em
      .fork()
      .getConnection()
      .execute('update webhooks set url = ? where id = ?', [url, hook.body.id]);
    assert.is((await call(pro, 'POST', `/projects/${id}/webhooks/${hook.body.id}/ping`)).status, 202);
    const end = performance.now() + 20_000;
    let last: { error: string | null; attempts: number; status: string } | undefined;
    while (performance.now() < end) {
      last = (await call(pro, 'GET', `/projects/${id}/webhooks/${hook.body.id}/deliveries`)).body.deliveries[0];
      if (last?.attempts === 1 && last.error) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.match(last!.error!, /^address_refused: 127\.0\.0\.1/);
    assert.is(last!.status, 'pending', 'tried again later, as any failure');
    assert.is(connections, 0, 'nothing reached the address');
  } finally {
    inside.close();
  }
});

test('a webhook takes 10 pings an hour: the 11th answers 429 with Retry-After, and queues nothing', async () => {
  const id = await newProject(pro, 'hooks-pings');
  const hook = (await call(pro, 'POST', `/projects/${id}/webhooks`, { url: 'https://hooks.example.com/p' })).body;
  for (let i = 0; i < 10; i++)
    assert.is((await call(pro, 'POST', `/projects/${id}/webhooks/${hook.id}/ping`)).status, 202, `ping ${i + 1}`);
  const res = await fetch(`${h.api}/api/v1/projects/${id}/webhooks/${hook.id}/ping`, {
    method: 'POST',
    headers: { authorization: `Bearer ${pro}` },
  });
  assert.is(res.status, 429);
  assert.is((await res.json()).error.code, 'rate_limited');
  const wait = Number(res.headers.get('retry-after'));
  assert.ok(wait > 3500 && wait <= 3600, `Retry-After ${wait}`);
  const listed = (await call(pro, 'GET', `/projects/${id}/webhooks/${hook.id}/deliveries?limit=100`)).body.deliveries;
  assert.is(listed.length, 10);
});

test('pings sent at once still take 10 an hour: the others are rate_limited and queue nothing', async () => {
  const { token, accountId } = await h.login('pro');
  const id = await newProject(token, 'hooks-pings-at-once');
  const hook = (await call(token, 'POST', `/projects/${id}/webhooks`, { url: 'https://hooks.example.com/q' })).body;
  // Straight to the service, all in one tick: each ping's count then ran before any other's insert.
  const { kernel } = h.running;
  const service = kernel.get<WebhookService>(WEBHOOK_SERVICE);
  const answers = await RequestContext.create(kernel.orm.em.fork(), () =>
    Promise.allSettled(Array.from({ length: 30 }, () => service.ping(accountId, id, hook.id))),
  );
  const refused = answers.filter((a) => a.status === 'rejected');
  assert.equal([answers.length - refused.length, refused.length], [10, 20]);
  for (const r of refused) assert.is((r as PromiseRejectedResult).reason.code, 'rate_limited');
  const listed = (await call(token, 'GET', `/projects/${id}/webhooks/${hook.id}/deliveries?limit=100`)).body.deliveries;
  assert.is(listed.length, 10);
});

test('created_by names the member who made a webhook, kept when they are removed; null for older ones', async () => {
  const { token: owner } = await h.login('pro');
  const id = await newProject(owner, 'hooks-by-member');
  const member = await liveMember(h, owner);
  const made = await call(member.token, 'POST', `/projects/${id}/webhooks`, { url: 'https://member.example.com/x' });
  assert.is(made.status, 201, JSON.stringify(made.body));
  const by = { user_id: member.id, email: member.email };
  assert.equal(made.body.created_by, by);
  const ownerMe = (await call(owner, 'GET', '/me')).body.user;
  const mine = (await call(owner, 'POST', `/projects/${id}/webhooks`, { url: 'https://owner.example.com/x' })).body;
  assert.equal(mine.created_by, { user_id: ownerMe.id, email: ownerMe.email });

  assert.is((await call(owner, 'DELETE', `/account/members/${member.id}`)).status, 204);
  // The webhook stays the account's (it is still delivered to): the owner sees who made it, to remove or recreate it.
  const makers = async () =>
    Object.fromEntries(
      (await call(owner, 'GET', `/projects/${id}/webhooks`)).body.webhooks.map((w: any) => [w.id, w.created_by]),
    );
  assert.equal(await makers(), { [made.body.id]: by, [mine.id]: mine.created_by });
  await h.running.kernel.orm.em
    .fork()
    .getConnection()
    .execute(`update webhooks set created_by = null where id = '${mine.id}'`);
  assert.equal(await makers(), { [made.body.id]: by, [mine.id]: null });
});

test.run();
