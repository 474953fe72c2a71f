// NATS restarted in the middle of a stage, on a nats-server of the test's own (never the machine's
// shared one): the running build finishes, the operation succeeds, and the queue works afterwards.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gatedProject } from '../helpers/gated-build.js';
import { ownNatsServer, type OwnNats } from '../helpers/nats.js';
import { cluster, processesOf, siteBody, until, type Cluster, type RoleProcess } from '../helpers/roles.js';

let nats: OwnNats;
let c: Cluster;
let api: RoleProcess;
let edge: RoleProcess;
let worker: RoleProcess;

test.before(async () => {
  nats = await ownNatsServer();
  c = await cluster({ HOIST_NATS_URL: nats.url, HOIST_QUEUE_VISIBILITY_SECONDS: '2', HOIST_STUCK_AFTER_SECONDS: '2' });
  [api, edge, worker] = await Promise.all([c.start('api'), c.start('edge'), c.start('worker')]);
});
test.after(async () => {
  await c?.close();
  await nats?.close();
});

test('a NATS restart mid-build: the build finishes, the operation succeeds, later deployments run', async () => {
  const token = await c.login(api.url);
  const auth = { authorization: `Bearer ${token}` };
  const op = async (id: string) => (await fetch(`${api.url}/api/v1/operations/${id}`, { headers: auth })).json();
  const p = await gatedProject({ api: api.url, dataDir: c.dataDir }, token, 'through-restart');
  const deploy = async (marker: string) => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(await p.zip(marker))]), 'site.zip');
    const res = await fetch(`${api.url}/api/v1/projects/${p.id}/local-to-live`, {
      method: 'POST',
      headers: auth,
      body: form,
    });
    const body = await res.json();
    // After the restart the API's own connection may still be coming back: the start is recorded all the same.
    assert.is(res.status, 202, JSON.stringify(body));
    return body.operation.id as string;
  };
  const site = () => siteBody(edge, 'through-restart.localhost');

  const first = await deploy('first');
  await until(() => processesOf(p.command, [worker.child.pid!]).length === 1, 'the build running');
  await nats.stop();
  // Down for longer than the ack wait (2 s): heartbeats to the queue fail meanwhile.
  await new Promise((r) => setTimeout(r, 3000));
  assert.is((await op(first)).status, 'running', 'the API answers without NATS');
  await nats.start();
  p.open();
  await until(
    async () => ['succeeded', 'failed', 'canceled'].includes((await op(first)).status),
    'the first deployment finished',
  );
  assert.is((await op(first)).status, 'succeeded', JSON.stringify(await op(first)));
  // The edge is another process: the switch reaches it on the change feed, moments after the commit the API shows
  // (well within the routing table's 30 s revalidation, which would hide a lost announcement).
  await until(async () => (await site()) === 'first', 'the edge serving the first release', 10_000);

  const second = await deploy('second');
  await until(
    async () => ['succeeded', 'failed', 'canceled'].includes((await op(second)).status),
    'the second deployment finished',
  );
  assert.is((await op(second)).status, 'succeeded', JSON.stringify(await op(second)));
  await until(async () => (await site()) === 'second', 'the edge serving the second release', 10_000);
});

test.run();
