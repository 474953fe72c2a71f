// The queue (NATS, on a nats-server of the test's own) away while an upload is recorded: the deployment is not lost.
// The answer is 202, the project's chain is its own, and once the queue answers a worker enqueues its first stage
// again (Recovery.requeue, every HOIST_REQUEUE_SECONDS) and it goes live.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { zipOf } from '../helpers/live.js';
import { ownNatsServer, type OwnNats } from '../helpers/nats.js';
import { cluster, siteBody, until, type Cluster, type RoleProcess } from '../helpers/roles.js';

let nats: OwnNats;
let c: Cluster;
let api: RoleProcess;
let edge: RoleProcess;

test.before(async () => {
  nats = await ownNatsServer();
  c = await cluster({ HOIST_NATS_URL: nats.url, HOIST_QUEUE_VISIBILITY_SECONDS: '2', HOIST_REQUEUE_SECONDS: '1' });
  [api, edge] = await Promise.all([c.start('api'), c.start('edge'), c.start('worker')]);
});
test.after(async () => {
  await c?.close();
  await nats?.close();
});

test('an upload while the queue is away is answered 202, kept, and deployed once the queue answers', async () => {
  const token = await c.login(api.url);
  const auth = { authorization: `Bearer ${token}` };
  const upload = async (marker: string) => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(await zipOf({ 'index.html': marker }))]), 'site.zip');
    form.append('name', 'outage');
    // Bounded: an answer that waited on the queue would fail here, not at the runner's file timeout.
    const res = await fetch(`${api.url}/api/v1/local-to-live`, {
      method: 'POST',
      headers: auth,
      body: form,
      signal: AbortSignal.timeout(20_000),
    });
    return { status: res.status, body: await res.json() };
  };
  const op = async (id: string) =>
    (await (
      await fetch(`${api.url}/api/v1/operations/${id}`, { headers: auth, signal: AbortSignal.timeout(10_000) })
    ).json()) as {
      status: string;
      stages: Record<string, { status: string }>;
    };

  await nats.stop();
  const accepted = await upload('through an outage');
  assert.is(accepted.status, 202, JSON.stringify(accepted.body));
  const id = accepted.body.operation.id as string;
  assert.is((await op(id)).stages.analyze.status, 'queued');
  // The chain is the project's: another upload meanwhile is refused as in progress, naming it.
  const second = await upload('another');
  assert.is(second.status, 409, JSON.stringify(second.body));
  assert.is(second.body.error.details.operation_id, id);

  await nats.start();
  await until(async () => ['succeeded', 'failed', 'canceled'].includes((await op(id)).status), 'the deployment');
  assert.is((await op(id)).status, 'succeeded', JSON.stringify(await op(id)));
  await until(
    async () => (await siteBody(edge, new URL(accepted.body.project.url).hostname)) === 'through an outage',
    'live',
  );
});

test.run();
