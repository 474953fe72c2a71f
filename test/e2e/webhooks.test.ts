// legs: db
// Webhooks through the API on a running Hoist (api, worker and edge): a deployment that ends is posted, signed, to
// the project's webhooks that receive its event; an endpoint that fails is tried again; a ping; the secret is shown
// once and stored sealed; removing a webhook or its project removes its deliveries.
import { createHmac } from 'node:crypto';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
type Seen = { path: string; headers: http.IncomingHttpHeaders; body: string; at: number };
const seen: Seen[] = [];
/** Paths whose next answers are these statuses (then 200). */
const failing = new Map<string, number[]>();
let receiver: http.Server;
let base: string;

test.before(async () => {
  receiver = http.createServer((req, res) => {
    let body = '';
    req
      .on('data', (d) => (body += d))
      .on('end', () => {
        seen.push({ path: req.url!, headers: req.headers, body, at: Date.now() });
        res.writeHead(failing.get(req.url!)?.shift() ?? 200).end('thanks');
      });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  h = await liveHoist({ webhookPrivateAddresses: true, webhookTimeoutSeconds: 3 });
  ({ token } = await h.login());
});
test.after(async () => {
  await h?.close();
  receiver?.closeAllConnections();
  receiver?.close();
});

const call = (method: string, path: string, body?: unknown) => h.call(token, method, path, body);

async function until<T>(get: () => Promise<T>, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const end = performance.now() + ms;
  for (;;) {
    const v = await get();
    if (ok(v)) return v;
    if (performance.now() > end) throw new Error(`timed out; last: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Deploys `files` to project `projectId` (or a new project) and returns the operation id and project id. */
async function deploy(files: Record<string, string>, to: { name: string } | { projectId: string }) {
  const path = 'projectId' in to ? `/api/v1/projects/${to.projectId}/local-to-live` : '/api/v1/local-to-live';
  const res = await h.upload(token, path, await zipOf(files), 'name' in to ? { name: to.name } : {});
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  const op = await h.waitFor(token, body.operation.id, undefined, 90_000);
  return { operationId: op.id as string, projectId: body.project.id as string, status: op.status as string };
}

/** Checks the Standard Webhooks signature of a delivery as a receiver would, with `secret`. */
function verify(s: Seen, secret: string): void {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const signed = `${s.headers['webhook-id']}.${s.headers['webhook-timestamp']}.${s.body}`;
  const expected = createHmac('sha256', key).update(signed).digest('base64');
  assert.is(s.headers['webhook-signature'], `v1,${expected}`);
  assert.ok(Math.abs(Number(s.headers['webhook-timestamp']) - Date.now() / 1000) < 120, 'a recent timestamp');
}

const deliveriesOf = async (projectId: string, webhookId: string) =>
  (await call('GET', `/api/v1/projects/${projectId}/webhooks/${webhookId}/deliveries`)).body.deliveries as any[];

test('a deployment that ends is posted, signed, to the webhooks of its event; the secret shows once', async () => {
  const first = await deploy({ 'index.html': '<h1>one</h1>' }, { name: 'hooked' });
  assert.is(first.status, 'succeeded');
  const all = await call('POST', `/api/v1/projects/${first.projectId}/webhooks`, { url: `${base}/all#frag` });
  assert.is(all.status, 201, JSON.stringify(all.body));
  assert.match(all.body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert.is(all.body.url, `${base}/all`, 'the fragment is dropped');
  assert.equal(all.body.events, ['deployment.succeeded', 'deployment.failed', 'deployment.canceled']);
  const failedOnly = await call('POST', `/api/v1/projects/${first.projectId}/webhooks`, {
    url: `${base}/failed-only`,
    events: ['deployment.failed'],
  });
  assert.is(failedOnly.status, 201);

  const listed = await call('GET', `/api/v1/projects/${first.projectId}/webhooks`);
  assert.is(listed.status, 200);
  assert.equal(
    listed.body.webhooks.map((w: any) => [w.url, w.last_delivery]),
    [
      [`${base}/all`, null],
      [`${base}/failed-only`, null],
    ],
  );
  assert.not.ok(JSON.stringify(listed.body).includes(all.body.secret), 'a list never shows a secret');
  const rows = await h.running.kernel.orm.em.fork().getConnection().execute('select secret_sealed from webhooks');
  assert.is(rows.length, 2);
  for (const r of rows) assert.not.ok(String(r.secret_sealed).includes(all.body.secret.slice(6)), 'stored sealed');

  const second = await deploy({ 'index.html': '<h1>two</h1>' }, { projectId: first.projectId });
  const got = await until(
    async () => seen.filter((s) => s.path === '/all'),
    (s) => s.length === 1,
  );
  verify(got[0], all.body.secret);
  assert.is(got[0].headers['content-type'], 'application/json');
  assert.is(got[0].headers['x-hoist-event'], 'deployment.succeeded');
  const payload = JSON.parse(got[0].body);
  assert.is(payload.type, 'deployment.succeeded');
  assert.equal(payload.data.project, { id: first.projectId, name: 'hooked' });
  assert.is(payload.data.operation.id, second.operationId);
  assert.is(payload.data.operation.status, 'succeeded');
  assert.match(payload.data.operation.result.url, /^http:\/\/hooked/);
  assert.is(payload.data.operation.result.live, true);
  const deliveries = await until(
    () => deliveriesOf(first.projectId, all.body.id),
    (d) => d[0]?.status === 'delivered',
  );
  assert.is(deliveries.length, 1);
  assert.is(deliveries[0].id, got[0].headers['webhook-id']);
  assert.equal(
    [deliveries[0].event, deliveries[0].operation_id, deliveries[0].attempts, deliveries[0].response_status],
    ['deployment.succeeded', second.operationId, 1, 200],
  );
  assert.is(deliveries[0].error, null);
  assert.is(deliveries[0].next_attempt_at, null);

  // A failed deployment goes to both; the first one, before the webhooks, went nowhere.
  const bad = await deploy({ 'readme.txt': 'nothing to serve' }, { projectId: first.projectId });
  assert.is(bad.status, 'failed');
  const failed = await until(
    async () => seen.filter((s) => s.path === '/failed-only'),
    (s) => s.length === 1,
  );
  verify(failed[0], failedOnly.body.secret);
  assert.is(JSON.parse(failed[0].body).type, 'deployment.failed');
  assert.is(JSON.parse(failed[0].body).data.operation.error.code.length > 0, true);
  await until(
    async () => seen.filter((s) => s.path === '/all'),
    (s) => s.length === 2,
  );
  assert.equal(
    seen.filter((s) => s.path === '/all').map((s) => JSON.parse(s.body).data.operation.id),
    [second.operationId, bad.operationId],
  );
  const last = (await call('GET', `/api/v1/projects/${first.projectId}/webhooks`)).body.webhooks;
  assert.is(last[1].last_delivery.event, 'deployment.failed');
});

test('deployment.started is posted as a deployment starts and as its retry does, to the webhooks asking', async () => {
  const { projectId } = await deploy({ 'index.html': '<h1>one</h1>' }, { name: 'started' });
  const started = await call('POST', `/api/v1/projects/${projectId}/webhooks`, {
    url: `${base}/started`,
    events: ['deployment.started', 'deployment.failed'],
  });
  assert.is(started.status, 201, JSON.stringify(started.body));
  assert.equal(started.body.events, ['deployment.started', 'deployment.failed']);
  const ends = await call('POST', `/api/v1/projects/${projectId}/webhooks`, { url: `${base}/ends` });
  assert.equal(ends.body.events, ['deployment.succeeded', 'deployment.failed', 'deployment.canceled']);

  const bad = await deploy({ 'readme.txt': 'nothing to serve' }, { projectId });
  assert.is(bad.status, 'failed');
  assert.is((await call('POST', `/api/v1/operations/${bad.operationId}/retry`)).status, 202);
  await h.waitFor(token, bad.operationId);
  const got = await until(
    async () => seen.filter((s) => s.path === '/started').map((s) => JSON.parse(s.body)),
    (s) => s.length === 4,
  );
  // Two starts (the deployment, its retry) and two ends, each of that operation (their tries may cross).
  assert.equal(got.map((b) => b.type).sort(), [
    'deployment.failed',
    'deployment.failed',
    'deployment.started',
    'deployment.started',
  ]);
  assert.ok(got.every((b) => b.data.operation.id === bad.operationId));
  for (const s of seen.filter((x) => x.path === '/started')) verify(s, started.body.secret);
  await until(
    async () => seen.filter((s) => s.path === '/ends').map((s) => JSON.parse(s.body).type),
    (types) => types.length === 2 && types.every((t) => t === 'deployment.failed'),
  );
  const bogus = await call('POST', `/api/v1/projects/${projectId}/webhooks`, {
    url: `${base}/bogus`,
    events: ['deployment.created'],
  });
  assert.is(bogus.status, 400);
  assert.is(bogus.body.error.details.field, 'events');
});

test('a failing endpoint is tried again with the same id and body, then delivered; a ping goes to any', async () => {
  const { projectId } = await deploy({ 'index.html': '<h1>retry</h1>' }, { name: 'retried' });
  failing.set('/flaky', [503]);
  const hook = await call('POST', `/api/v1/projects/${projectId}/webhooks`, {
    url: `${base}/flaky`,
    events: ['deployment.canceled'],
  });
  const ping = await call('POST', `/api/v1/projects/${projectId}/webhooks/${hook.body.id}/ping`);
  assert.is(ping.status, 202);
  assert.equal([ping.body.event, ping.body.status, ping.body.attempts], ['ping', 'pending', 0]);
  const afterFirst = await until(
    () => deliveriesOf(projectId, hook.body.id),
    (d) => d[0]?.attempts === 1 && d[0]?.status === 'pending' && d[0]?.error !== null,
  );
  assert.is(afterFirst[0].error, 'answered 503');
  assert.is(afterFirst[0].response_status, 503);
  const due = new Date(afterFirst[0].next_attempt_at).getTime() - new Date(afterFirst[0].updated_at).getTime();
  assert.ok(due >= 9_000 && due <= 11_000, `the next try is 10 s on: ${due} ms`);
  const done = await until(
    () => deliveriesOf(projectId, hook.body.id),
    (d) => d[0]?.status === 'delivered',
    40_000,
  );
  assert.equal([done[0].attempts, done[0].response_status, done[0].error], [2, 200, null]);
  const tries = seen.filter((s) => s.path === '/flaky');
  assert.is(tries.length, 2);
  assert.is(tries[0].headers['webhook-id'], tries[1].headers['webhook-id']);
  assert.is(tries[0].body, tries[1].body, 'the same body each try');
  verify(tries[1], hook.body.secret);
  const body = JSON.parse(tries[0].body);
  assert.is(body.type, 'ping');
  assert.equal(body.data.webhook, { id: hook.body.id, url: `${base}/flaky`, events: ['deployment.canceled'] });
});

test('removing a webhook, or its project, removes it and its deliveries', async () => {
  const { projectId } = await deploy({ 'index.html': '<h1>gone</h1>' }, { name: 'removed' });
  const a = await call('POST', `/api/v1/projects/${projectId}/webhooks`, { url: `${base}/a` });
  const b = await call('POST', `/api/v1/projects/${projectId}/webhooks`, { url: `${base}/b` });
  await call('POST', `/api/v1/projects/${projectId}/webhooks/${a.body.id}/ping`);
  await until(
    () => deliveriesOf(projectId, a.body.id),
    (d) => d[0]?.status === 'delivered',
  );
  const count = async (table: string) =>
    Number(
      (
        await h.running.kernel.orm.em
          .fork()
          .getConnection()
          .execute(`select count(*) as n from ${table} where project_id = ?`, [projectId])
      )[0].n,
    );
  assert.is(await count('webhook_deliveries'), 1);
  assert.is((await call('DELETE', `/api/v1/projects/${projectId}/webhooks/${a.body.id}`)).status, 204);
  assert.is((await call('DELETE', `/api/v1/projects/${projectId}/webhooks/${a.body.id}`)).status, 404);
  assert.is(await count('webhook_deliveries'), 0);
  assert.equal(
    (await call('GET', `/api/v1/projects/${projectId}/webhooks`)).body.webhooks.map((w: any) => w.id),
    [b.body.id],
  );
  assert.is((await call('DELETE', `/api/v1/projects/${projectId}`)).status < 300, true);
  await until(
    () => count('webhooks'),
    (n) => n === 0,
  );
});

test("an account's endpoints that never answer hold 2 tries at once; another account's goes through", async () => {
  // A server that takes connections and never answers: each try waits out webhookTimeoutSeconds.
  let open = 0;
  let most = 0;
  const silent = net.createServer((socket) => {
    most = Math.max(most, ++open);
    socket.on('close', () => open--).on('error', () => undefined);
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const { token: slow } = await h.login('pro');
  try {
    const sink = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const project = (await h.call(slow, 'POST', '/api/v1/projects/', { name: 'slow-hooks' })).body.id;
    for (let i = 0; i < 10; i++) {
      const hook = (await h.call(slow, 'POST', `/api/v1/projects/${project}/webhooks`, { url: `${sink}/${i}` })).body;
      for (let p = 0; p < 2; p++)
        assert.is((await h.call(slow, 'POST', `/api/v1/projects/${project}/webhooks/${hook.id}/ping`)).status, 202);
    }
    const { projectId } = await deploy({ 'index.html': '<h1>fair</h1>' }, { name: 'fair' });
    const mine = await call('POST', `/api/v1/projects/${projectId}/webhooks`, { url: `${base}/fair` });
    await call('POST', `/api/v1/projects/${projectId}/webhooks/${mine.body.id}/ping`);
    await until(
      () => deliveriesOf(projectId, mine.body.id),
      (d) => d[0]?.status === 'delivered',
    );
    await until(
      async () => most,
      (n) => n >= 2,
    );
    assert.is(most, 2, 'at most 2 tries of one account at once');
  } finally {
    silent.close();
  }
});

test.run();
