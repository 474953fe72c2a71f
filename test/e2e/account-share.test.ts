// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { OPERATION_STORE } from '../../adapters/deployment-services.js';
import { RECOVERY } from '../../core/deployments/recovery.js';
import { GATE_FILE, workspaceGate, type WorkspaceGate } from '../helpers/gated-build.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

// Two worker slots, one kept for others (the default): an account runs one deployment chain at once.
let h: LiveHoist;
let a: string;
let b: string;
test.before(async () => {
  h = await liveHoist({ workerConcurrency: 2 });
  ({ token: a } = await h.login('pro'));
  ({ token: b } = await h.login('pro'));
});
test.after(async () => h?.close());

async function project(token: string, name: string, settings: Record<string, string> = {}) {
  const res = await h.call(token, 'POST', '/api/v1/projects/', { name, settings });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; url: string };
}

async function deploy(token: string, projectId: string, files: Record<string, string>) {
  const res = await h.upload(token, `/api/v1/projects/${projectId}/local-to-live`, await zipOf(files));
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  return body.operation.id as string;
}

/** A build that waits (a minute at most) for `gate`'s file in its workspace, then writes `marker` as its page. */
const gatedBuild = (gate: WorkspaceGate, marker: string) => ({
  'build.js': `// ${gate.id}
const fs = require('fs');
const bail = setTimeout(() => process.exit(1), 60000);
const t = setInterval(() => {
  if (!fs.existsSync(${JSON.stringify(GATE_FILE)})) return;
  clearInterval(t);
  clearTimeout(bail);
  fs.mkdirSync('dist', { recursive: true });
  fs.writeFileSync('dist/index.html', ${JSON.stringify(marker)});
}, 50);
`,
});
const built = { build_command: 'node build.js', output_directory: 'dist' };

const view = async (token: string, id: string) => (await h.get(token, `/api/v1/operations/${id}`)).body;
const buildRuns = (op: any) => op.stages?.build?.status === 'running';

test("an account's deploys take no more than its share of the workers; others' go live meanwhile", async () => {
  const gate = workspaceGate(h.dataDir, 'build.js');
  const [p1, p2] = [await project(a, 'share-one', built), await project(a, 'share-two', built)];
  const first = await deploy(a, p1.id, gatedBuild(gate, 'one'));
  await h.waitFor(a, first, buildRuns);

  // The account's second chain is held: nothing of it runs, and the operation says why.
  const second = await deploy(a, p2.id, gatedBuild(gate, 'two'));
  const held = await view(a, second);
  assert.is(held.status, 'running');
  assert.is(held.stages.analyze.status, 'queued');
  assert.is(held.queue.state, 'held', JSON.stringify(held.queue));
  assert.is(held.queue.workers, 2);
  assert.match(held.queue.reason, /1 at once/);
  assert.ok(Date.parse(held.queue.held_since) > 0);

  // Another account's deploy takes the slot the first account may not: it goes live while the gate is shut.
  const other = await project(b, 'share-other');
  const op = await h.waitFor(b, await deploy(b, other.id, { 'index.html': 'other account' }));
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is((await h.site(hostOf(other.url))).body, 'other account');
  assert.is((await view(a, second)).queue.state, 'held', 'still held while its account runs its share');
  assert.ok(buildRuns(await view(a, first)));

  // The first chain ends: the held one runs, and both go live.
  gate.open();
  try {
    for (const [id, p, marker] of [
      [first, p1, 'one'],
      [second, p2, 'two'],
    ] as const) {
      const done = await h.waitFor(a, id);
      assert.is(done.status, 'succeeded', JSON.stringify(done));
      assert.is((await h.site(hostOf(p.url))).body, marker);
    }
  } finally {
    gate.close();
  }
});

test('a held deployment cancels at once; a retry of it is held again while its account runs its share', async () => {
  const gate = workspaceGate(h.dataDir, 'build.js');
  const [p1, p2] = [await project(a, 'cancel-one', built), await project(a, 'cancel-two', built)];
  const first = await deploy(a, p1.id, gatedBuild(gate, 'one'));
  await h.waitFor(a, first, buildRuns);
  const second = await deploy(a, p2.id, gatedBuild(gate, 'two'));
  assert.is((await view(a, second)).queue.state, 'held');

  assert.is((await h.post(a, `/api/v1/operations/${second}/cancel`)).status, 202);
  const canceled = await h.waitFor(a, second);
  assert.is(canceled.status, 'canceled', JSON.stringify(canceled));
  assert.is(canceled.stages.analyze.started_at, null, 'the held chain never ran');

  const retry = await h.post(a, `/api/v1/operations/${second}/retry`);
  assert.is(retry.status, 202, JSON.stringify(retry.body));
  const again = await view(a, second);
  assert.is(again.status, 'running');
  assert.is(again.queue?.state, 'held', JSON.stringify(again));

  gate.open();
  try {
    assert.is((await h.waitFor(a, first)).status, 'succeeded');
    const done = await h.waitFor(a, second);
    assert.is(done.status, 'succeeded', JSON.stringify(done));
    assert.is((await h.site(hostOf(p2.url))).body, 'two');
  } finally {
    gate.close();
  }
});

test('a held deployment whose release was lost (with the process that ended the chain) goes by the sweep', async () => {
  const store = h.running.kernel.get(OPERATION_STORE);
  const gate = workspaceGate(h.dataDir, 'build.js');
  const [p1, p2] = [await project(a, 'lost-one', built), await project(a, 'lost-two')];
  const first = await deploy(a, p1.id, gatedBuild(gate, 'one'));
  await h.waitFor(a, first, buildRuns);
  const second = await deploy(a, p2.id, { 'index.html': 'let go' });
  assert.is((await view(a, second)).queue.state, 'held');

  const release = store.release;
  store.release = async () => 0; // the process that ends the first chain stops before it lets the second go
  try {
    gate.open();
    assert.is((await h.waitFor(a, first)).status, 'succeeded');
  } finally {
    store.release = release;
    gate.close();
  }
  await new Promise((r) => setTimeout(r, 300));
  assert.is((await view(a, second)).queue.state, 'held', 'nothing let it go');

  assert.is(await h.running.kernel.get(RECOVERY).requeue(0), 1);
  const done = await h.waitFor(a, second);
  assert.is(done.status, 'succeeded', JSON.stringify(done));
  assert.is((await h.site(hostOf(p2.url))).body, 'let go');
});

test("a rollback (promote) is held like any deployment, and goes first when its account's share has room", async () => {
  const { token: c } = await h.login('team');
  const site = await project(c, 'roll-back');
  for (const marker of ['first', 'second'])
    assert.is((await h.waitFor(c, await deploy(c, site.id, { 'index.html': marker }))).status, 'succeeded');
  const earlier = (await h.get(c, `/api/v1/projects/${site.id}/releases`)).body.releases[1];
  const gate = workspaceGate(h.dataDir, 'build.js');
  const busy = await deploy(c, (await project(c, 'roll-busy', built)).id, gatedBuild(gate, 'busy'));
  await h.waitFor(c, busy, buildRuns);
  const later = await deploy(c, (await project(c, 'roll-later')).id, { 'index.html': 'later' });
  const res = await h.post(c, `/api/v1/projects/${site.id}/releases/${earlier.id}/promote`);
  assert.is(res.status, 202, JSON.stringify(res.body));
  const rollback = res.body.operation.id;
  assert.equal([(await view(c, later)).queue.state, (await view(c, rollback)).queue.state], ['held', 'held']);

  gate.open();
  try {
    const [done, after] = [await h.waitFor(c, rollback), await h.waitFor(c, later)];
    assert.equal([done.status, after.status], ['succeeded', 'succeeded']);
    assert.is((await h.site(hostOf(site.url))).body, 'first');
    // Held before the rollback, the other deployment still ran after it.
    assert.ok(Date.parse(after.stages.analyze.started_at) >= Date.parse(done.stages.deploy.finished_at));
  } finally {
    gate.close();
    await h.waitFor(c, busy);
  }
});

test.run();
