// legs: db
import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Kernel } from '../../../adapters/kernel.js';
import { accessProofs } from '../../../core/access/site-access-service.js';
import { ROUTES_CHANNEL } from '../../../core/deployments/host-routes.js';
import { RoutingTable } from '../../../core/deployments/routing-table.js';
import { AccessGrant } from '../../../core/entities/access-grant.js';
import { Deployment, type ReleaseTarget } from '../../../core/entities/deployment.js';
import { Domain } from '../../../core/entities/domain.js';
import { Project } from '../../../core/entities/project.js';
import { previewLabel } from '../../../core/projects/project-url.js';
import { CHANGE_FEED, type ChangeFeed } from '../../../core/ports/change-feed.js';
import { testKernel } from '../../helpers/kernel.js';

let kernel: Kernel;
let feed: ChangeFeed;
const tables: RoutingTable[] = [];
test.before(async () => {
  kernel = await testKernel();
  feed = kernel.get(CHANGE_FEED);
});
test.after(async () => {
  for (const t of tables) t.stop();
  await kernel?.stop();
});

async function table(revalidateMs = 60_000): Promise<RoutingTable> {
  const t = new RoutingTable(kernel.orm.em, feed, { appsDomain: 'apps.test', revalidateMs, log: kernel.log });
  tables.push(t);
  await t.start();
  return t;
}
const now = () => new Date();
const em = () => kernel.orm.em.fork();

/** A project and a live static release of it; returns their ids. */
async function liveProject(slug: string, visibility = 'public') {
  const accountId = randomUUID();
  const project = Object.assign(new Project(), { accountId, name: slug, slug, visibility, createdAt: now() });
  project.updatedAt = now();
  const deploymentId = await release(project.id, accountId, { kind: 'static', root: `/releases/${slug}-1` });
  project.liveDeploymentId = deploymentId;
  await em().insert(Project, project);
  return { projectId: project.id, accountId, deploymentId };
}
async function release(projectId: string, accountId: string, target: ReleaseTarget): Promise<string> {
  const d = Object.assign(new Deployment(), {
    accountId,
    projectId,
    versionId: randomUUID(),
    buildId: randomUUID(),
    operationId: randomUUID(),
    status: 'live',
    target,
    createdAt: now(),
  });
  await em().insert(Deployment, d);
  return d.id;
}
/** Writes `fields` on the project and announces it, as core's writes do. */
async function change(projectId: string, fields: Partial<Project>) {
  await em().nativeUpdate(Project, { id: projectId }, fields);
  await feed.publish(ROUTES_CHANNEL, projectId);
}
/** Waits (up to 5 s) until `check` holds: the postgres leg's notifications arrive from another connection. */
async function until(check: () => boolean, what: string) {
  const end = performance.now() + 5000;
  while (!check()) {
    if (performance.now() > end) throw new Error(`not within 5 s: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('loaded at start: a live project on its own host (any case, port, trailing dot); nothing else', async () => {
  const a = await liveProject('alpha');
  const idle = Object.assign(new Project(), { accountId: randomUUID(), name: 'idle', slug: 'idle' });
  Object.assign(idle, { createdAt: now(), updatedAt: now() });
  await em().insert(Project, idle);
  const t = await table();
  for (const host of ['alpha.apps.test', 'ALPHA.Apps.Test.', 'alpha.apps.test:8080']) {
    const r = t.lookup(host);
    assert.is(r?.projectId, a.projectId, host);
    assert.is(r?.deploymentId, a.deploymentId, host);
    assert.equal(r?.target, { kind: 'static', root: '/releases/alpha-1' });
  }
  for (const host of ['idle.apps.test', 'beta.apps.test', 'alpha.other.test', 'apps.test', '', undefined])
    assert.is(t.lookup(host), null, String(host));
  assert.is((await t.liveReleaseOf('alpha.apps.test'))?.projectId, a.projectId);
});

test('a release switch is seen after its announcement; an entry taken before keeps the old release', async () => {
  const p = await liveProject('switch');
  const t = await table();
  const before = t.lookup('switch.apps.test')!;
  const next = await release(p.projectId, p.accountId, { kind: 'static', root: '/releases/switch-2' });
  await change(p.projectId, { liveDeploymentId: next });
  await until(() => t.lookup('switch.apps.test')?.deploymentId === next, 'the new release');
  assert.equal(t.lookup('switch.apps.test')!.target, { kind: 'static', root: '/releases/switch-2' });
  assert.is(before.deploymentId, p.deploymentId, 'a request holding the old entry is answered from it alone');
  assert.equal(before.target, { kind: 'static', root: '/releases/switch-1' });
});

test('a deleted project is served no more; a visibility change is seen', async () => {
  const p = await liveProject('vis');
  const gone = await liveProject('gone');
  const t = await table();
  await change(p.projectId, { visibility: 'draft' });
  await until(() => t.lookup('vis.apps.test')?.visibility === 'draft', 'visibility draft');
  await change(gone.projectId, { status: 'deleting', slug: `~deleted-${gone.projectId}` });
  await until(() => t.lookup('gone.apps.test') === null, 'the deleted project gone');
  assert.is(t.lookup('vis.apps.test')?.projectId, p.projectId, 'the other project stays');
});

test('a customer domain is served while active, and no more once it is not', async () => {
  const p = await liveProject('dom');
  const t = await table();
  const domain = Object.assign(new Domain(), {
    accountId: p.accountId,
    projectId: p.projectId,
    hostname: 'www.customer.test',
    token: 'hoist-token',
    nextCheckAt: now(),
    createdAt: now(),
    updatedAt: now(),
  });
  await em().insert(Domain, domain);
  await feed.publish(ROUTES_CHANNEL, p.projectId);
  await new Promise((r) => setTimeout(r, 100));
  assert.is(t.lookup('www.customer.test'), null, 'a pending domain is not served');
  await em().nativeUpdate(Domain, { id: domain.id }, { status: 'active', ownedHostname: 'www.customer.test' });
  await feed.publish(ROUTES_CHANNEL, p.projectId);
  await until(() => t.lookup('WWW.customer.test.')?.projectId === p.projectId, 'the active domain');
  await em().nativeUpdate(Domain, { id: domain.id }, { status: 'misconfigured' });
  await feed.publish(ROUTES_CHANNEL, p.projectId);
  await until(() => t.lookup('www.customer.test') === null, 'the misconfigured domain dropped');
  assert.is(t.lookup('dom.apps.test')?.projectId, p.projectId);
});

test("a private project's entry carries what opens it: its password and grants, kept current", async () => {
  const p = await liveProject('priv', 'private');
  await em().nativeUpdate(Project, { id: p.projectId }, { accessPasswordHash: 'hash-one' });
  const grant = Object.assign(new AccessGrant(), { projectId: p.projectId, email: 'a@example.test', createdAt: now() });
  await em().insert(AccessGrant, grant);
  const t = await table();
  assert.equal([...t.lookup('priv.apps.test')!.accessProofs].sort(), [...accessProofs('hash-one', [grant.id])].sort());
  await em().nativeDelete(AccessGrant, { id: grant.id });
  await change(p.projectId, { accessPasswordHash: 'hash-two' });
  await until(() => !t.lookup('priv.apps.test')!.accessProofs.has(`grant:${grant.id}`), 'the grant gone');
  assert.equal([...t.lookup('priv.apps.test')!.accessProofs], [...accessProofs('hash-two', [])]);
  const pub = await liveProject('pub');
  assert.is(pub.projectId.length, 36);
  await feed.publish(ROUTES_CHANNEL, pub.projectId);
  await until(() => t.lookup('pub.apps.test') !== null, 'the new project');
  assert.is(t.lookup('pub.apps.test')!.accessProofs.size, 0, 'a public project has no proofs');
});

test("a public project's grants are dormant: its gated preview, live entry and public preview carry none", async () => {
  const p = await liveProject('gated');
  const grant = Object.assign(new AccessGrant(), { projectId: p.projectId, email: 'g@example.test', createdAt: now() });
  await em().insert(AccessGrant, grant);
  const preview = Object.assign(new Deployment(), {
    accountId: p.accountId,
    projectId: p.projectId,
    versionId: randomUUID(),
    buildId: randomUUID(),
    operationId: randomUUID(),
    status: 'preview',
    target: { kind: 'static', root: '/releases/gated-preview' },
    expiresAt: new Date(Date.now() + 3_600_000),
    createdAt: now(),
  });
  await em().insert(Deployment, preview);
  const t = await table();
  const host = `${previewLabel('gated', preview.operationId)}.apps.test`;
  assert.is(t.lookup(host)!.visibility, 'private', 'the preview is behind the gate');
  assert.is(t.lookup(host)!.accessProofs.size, 0, 'kept, unused: the grant opens nothing');
  assert.is(t.lookup('gated.apps.test')!.accessProofs.size, 0, 'the public live entry has no proofs');
  // Private again, the grant opens the live site and the preview.
  await change(p.projectId, { visibility: 'private' });
  await until(() => t.lookup(host)!.accessProofs.size === 1, 'the grant in effect again');
  assert.equal([...t.lookup(host)!.accessProofs], [...accessProofs(null, [grant.id])]);
  await change(p.projectId, { visibility: 'public' });
  await until(() => t.lookup(host)!.accessProofs.size === 0, 'dormant again');
  await change(p.projectId, { previewVisibility: 'public' });
  await until(() => t.lookup(host)!.visibility === 'draft', 'the preview made public');
  assert.is(t.lookup(host)!.accessProofs.size, 0, 'a public preview has no proofs');
});

test('a switch previewed in its transaction is served at once; its reads take the one connection in turn', async () => {
  const p = await liveProject('inside', 'private');
  const t = await table();
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.message);
  process.on('warning', onWarning);
  try {
    const next = await release(p.projectId, p.accountId, { kind: 'static', root: '/releases/inside-2' });
    await kernel.orm.em.fork().transactional(async (tx) => {
      await tx.nativeUpdate(Project, { id: p.projectId }, { liveDeploymentId: next });
      await t.preview(p.projectId, tx);
    });
    assert.is(t.lookup('inside.apps.test')?.deploymentId, next, 'served without an announcement');
    // pg warns when a query is sent while the connection still runs one (an error from pg 9 on).
    await new Promise((r) => setImmediate(r));
    assert.equal(
      warnings.filter((w) => /already executing a query/.test(w)),
      [],
    );
  } finally {
    process.off('warning', onWarning);
  }
});

test("a switch previewed with its release repoints the project's entries in memory, hosts and gate kept", async () => {
  const p = await liveProject('swap', 'private');
  const domain = Object.assign(new Domain(), {
    accountId: p.accountId,
    projectId: p.projectId,
    hostname: 'swap.customer.test',
    ownedHostname: 'swap.customer.test',
    status: 'active',
    token: 'hoist-token',
    nextCheckAt: now(),
    createdAt: now(),
    updatedAt: now(),
  });
  await em().insert(Domain, domain);
  const t = await table();
  const before = t.lookup('swap.apps.test')!;
  const next = await release(p.projectId, p.accountId, { kind: 'static', root: '/releases/swap-2' });
  await kernel.orm.em.fork().transactional(async (tx) => {
    await tx.nativeUpdate(Project, { id: p.projectId }, { liveDeploymentId: next });
    // Told, not read: a release the database does not name would not come from a read.
    await t.preview(p.projectId, tx, { deploymentId: 'told', target: { kind: 'static', root: '/releases/told' } });
  });
  for (const host of ['swap.apps.test', 'swap.customer.test']) {
    const entry = t.lookup(host)!;
    assert.is(entry.deploymentId, 'told', host);
    assert.equal(entry.target, { kind: 'static', root: '/releases/told' });
    assert.is(entry.visibility, 'private');
    assert.equal(entry.accessProofs, before.accessProofs);
  }
  assert.is(t.lookup('swap.customer.test'), t.lookup('swap.apps.test'), 'the hosts share one entry, as loaded');
  assert.is(before.deploymentId, p.deploymentId, 'an entry taken before keeps its release');
  // The announcement after the commit reads what committed.
  await feed.publish(ROUTES_CHANNEL, p.projectId);
  await until(() => t.lookup('swap.apps.test')?.deploymentId === next, 'the committed release');
});

test('a switch previewed with its release is read in its transaction when the project has no entry', async () => {
  const p = await liveProject('fresh');
  await em().nativeUpdate(Project, { id: p.projectId }, { liveDeploymentId: null });
  const t = await table();
  assert.is(t.lookup('fresh.apps.test'), null);
  await kernel.orm.em.fork().transactional(async (tx) => {
    await tx.nativeUpdate(Project, { id: p.projectId }, { liveDeploymentId: p.deploymentId });
    await t.preview(p.projectId, tx, { deploymentId: 'told', target: { kind: 'static', root: '/releases/told' } });
  });
  assert.is(t.lookup('fresh.apps.test')?.deploymentId, p.deploymentId, 'read, not told');
});

test('a change nobody announced is seen after the periodic revalidation', async () => {
  const p = await liveProject('quiet');
  const t = await table(300);
  const next = await release(p.projectId, p.accountId, { kind: 'http', url: 'http://127.0.0.1:9' });
  await em().nativeUpdate(Project, { id: p.projectId }, { liveDeploymentId: next });
  await new Promise((r) => setTimeout(r, 50));
  assert.is(t.lookup('quiet.apps.test')?.deploymentId, p.deploymentId, 'not announced: not seen yet');
  await until(() => t.lookup('quiet.apps.test')?.deploymentId === next, 'revalidated');
  assert.equal(t.lookup('quiet.apps.test')!.target, { kind: 'http', url: 'http://127.0.0.1:9' });
});

test('reload(null) (a lost connection) reads every project again', async () => {
  const t = await table();
  const late = await liveProject('late');
  assert.is(t.lookup('late.apps.test'), null);
  await t.reload(null);
  assert.is(t.lookup('late.apps.test')?.projectId, late.projectId);
  assert.ok(t.size >= 1);
});

test.run();
