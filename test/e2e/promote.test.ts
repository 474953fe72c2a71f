// legs: db
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
test.before(async () => {
  h = await liveHoist({ healthTimeoutSeconds: 4 });
  ({ token } = await h.login());
});
test.after(async () => h?.close());

/** A static release whose every file starts and ends with its marker (same length for every marker). */
const site = (marker: string) =>
  zipOf({
    'index.html': `<!--${marker}--><h1>${'x'.repeat(3000)}</h1><!--${marker}-->`,
    'app.js': `/*${marker}*/${'y'.repeat(3000)}/*${marker}*/`,
  });

/** Uploads `zip` (to a new project `name`, or to project `projectId`) and waits for it to succeed. */
async function deploy(zip: Buffer, to: { name: string } | { projectId: string }) {
  const path = 'projectId' in to ? `/api/v1/projects/${to.projectId}/local-to-live` : '/api/v1/local-to-live';
  const res = await h.upload(token, path, zip, 'name' in to ? { name: to.name } : {});
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  const op = await h.waitFor(token, body.operation.id, undefined, 90_000);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  return { projectId: body.project.id as string, host: hostOf(body.project.url), operationId: op.id as string };
}

const releasesOf = async (projectId: string, query = '') =>
  (await h.get(token, `/api/v1/projects/${projectId}/releases${query}`)).body.releases as any[];
const promote = (projectId: string, releaseId: string, t = token) =>
  h.post(t, `/api/v1/projects/${projectId}/releases/${releaseId}/promote`);
const markersOf = (body: string) => body.match(/release-[A-Z]/g) ?? [];

test('entitlements announce instant_rollback and release_retention per plan', async () => {
  const pro = (await h.get(token, '/api/v1/billing/entitlements')).body;
  assert.is(pro.capabilities.instant_rollback, true);
  assert.is(pro.limits.release_retention, 5);
  const free = (await h.get((await h.login('free')).token, '/api/v1/billing/entitlements')).body;
  assert.is(free.capabilities.instant_rollback, false);
  assert.is(free.limits.release_retention, 1);
  const plans = (await h.get(token, '/api/v1/billing/plans')).body.plans;
  assert.equal(
    plans.map((p: any) => [p.id, p.capabilities]),
    [
      ['free', []],
      ['pro', ['instant_rollback']],
      ['team', ['instant_rollback']],
    ],
  );
});

test('promote of a static release: the pointer flips back at once, readers never see a mix', async () => {
  const zipA = await site('release-A');
  const a = await deploy(zipA, { name: 'promote-static' });
  const b = await deploy(await site('release-B'), { projectId: a.projectId });
  const [relB, relA] = await releasesOf(a.projectId);
  assert.equal([relB.live, relB.promotable, relA.live, relA.promotable], [true, false, false, true]);
  // Provenance: who, from what, and the archive's SHA-256.
  assert.is(relA.source, 'upload');
  assert.match(relA.started_by.email, /@example\.com$/);
  assert.is(relA.archive_sha256, createHash('sha256').update(zipA).digest('hex'));
  assert.is(relA.target, 'production');

  let done = false;
  const seen: string[][] = [];
  const reader = (async () => {
    while (!done) {
      const res = await h.site(b.host, '/app.js');
      assert.is(res.status, 200);
      seen.push(markersOf(res.body));
    }
  })();
  const res = await promote(a.projectId, relA.id);
  assert.is(res.status, 202, JSON.stringify(res.body));
  assert.is(res.body.action, 'promote_queued');
  const op = await h.waitFor(token, res.body.operation.id);
  await new Promise((r) => setTimeout(r, 100));
  done = true;
  await reader;
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is(op.kind, 'promote');
  assert.ok(
    seen.every((m) => m.length === 2 && m[0] === m[1]),
    'a response mixed releases',
  );
  assert.ok(seen.length > 5, `${seen.length} samples`);
  const page = await h.site(b.host);
  assert.equal(markersOf(page.body), ['release-A', 'release-A']);
  assert.is(page.headers['x-hoist-release'], relA.id);

  const [nowB, nowA] = await releasesOf(a.projectId);
  assert.equal([nowA.live, nowA.promotable, nowB.live, nowB.promotable], [true, false, false, true]);
  const detail = (await h.get(token, `/api/v1/projects/${a.projectId}/releases/${relA.id}`)).body;
  assert.is(detail.deployment.live, true);
  assert.is(detail.archive_sha256, relA.archive_sha256);

  // The promote operation is listed with its kind.
  const listed = (await h.get(token, `/api/v1/operations?kind=promote&project_id=${a.projectId}`)).body;
  assert.equal(
    listed.operations.map((o: any) => o.id),
    [op.id],
  );

  // Promoting the live release starts nothing: the operation that made it live.
  const again = await promote(a.projectId, relA.id);
  assert.is(again.status, 202);
  assert.is(again.body.operation.id, relA.operation_id);
  assert.is(again.body.operation.status, 'succeeded');

  // And back to B, under an Idempotency-Key: a repeat answers the same operation.
  const key = { authorization: `Bearer ${token}`, 'idempotency-key': 'promote-b' };
  const url = `${h.api}/api/v1/projects/${a.projectId}/releases/${nowB.id}/promote`;
  const first = await (await fetch(url, { method: 'POST', headers: key })).json();
  const second = await (await fetch(url, { method: 'POST', headers: key })).json();
  assert.is(second.operation.id, first.operation.id);
  assert.is((await h.waitFor(token, first.operation.id)).status, 'succeeded');
  assert.equal(markersOf((await h.site(b.host)).body), ['release-B', 'release-B']);
});

test('refusals: 403 without the capability, 404 for another account or a bad id; nothing changes', async () => {
  const a = await deploy(await site('release-C'), { name: 'promote-refusals' });
  await deploy(await site('release-D'), { projectId: a.projectId });
  const [live, earlier] = await releasesOf(a.projectId);
  const opsBefore = (await h.get(token, `/api/v1/operations?project_id=${a.projectId}`)).body.operations.length;

  const other = (await h.login()).token;
  const foreign = await promote(a.projectId, earlier.id, other);
  assert.is(foreign.status, 404);
  assert.is(foreign.body.error.code, 'not_found');
  const bad = await promote(a.projectId, 'not-a-uuid');
  assert.is(bad.status, 404);
  const missing = await promote(a.projectId, '00000000-0000-4000-8000-000000000000');
  assert.is(missing.status, 404);

  // A free account's own release: refused by the plan, with the plan fields.
  const free = await h.login('free');
  const freeZip = await site('release-E');
  const up = await h.upload(free.token, '/api/v1/local-to-live', freeZip, { name: 'free-site' });
  const freeBody = await up.json();
  await h.waitFor(free.token, freeBody.operation.id);
  const freeRel = (await h.get(free.token, `/api/v1/projects/${freeBody.project.id}/releases`)).body.releases[0];
  const refused = await promote(freeBody.project.id, freeRel.id, free.token);
  assert.is(refused.status, 403);
  assert.equal(
    [refused.body.error.code, refused.body.error.details.feature, refused.body.error.details.plan],
    ['plan_restricted', 'instant_rollback', 'free'],
  );
  assert.is(refused.body.error.details.required_plan, 'pro');

  const after = await releasesOf(a.projectId);
  assert.equal(
    after.map((r) => [r.id, r.live]),
    [
      [live.id, true],
      [earlier.id, false],
    ],
  );
  assert.equal(markersOf((await h.site(a.host)).body), ['release-D', 'release-D']);
  const opsAfter = (await h.get(token, `/api/v1/operations?project_id=${a.projectId}`)).body.operations.length;
  assert.is(opsAfter, opsBefore);
});

test('409: a release that never went live; any promote while another chain of the project runs', async () => {
  // A Node.js app that exits at once fails at Deploy: its deployment record never went live.
  const crash = await zipOf({ 'package.json': '{"name":"x","main":"server.js"}', 'server.js': 'process.exit(3)' });
  const res = await h.upload(token, '/api/v1/local-to-live', crash, { name: 'promote-never' });
  const body = await res.json();
  const failed = await h.waitFor(token, body.operation.id, undefined, 60_000);
  assert.is(failed.status, 'failed', JSON.stringify(failed));
  const projectId = body.project.id;
  const [never] = (await h.get(token, `/api/v1/projects/${projectId}/deployments`)).body.deployments;
  assert.ok(never && never.live_at === null, JSON.stringify([never, failed.error]));
  const refused = await promote(projectId, never.id);
  assert.is(refused.status, 409);
  assert.equal([refused.body.error.code, refused.body.error.details.reason], ['not_promotable', 'never_live']);
  assert.equal(await releasesOf(projectId), []);

  // A slow build holds the chain of a project with an earlier, promotable release.
  const a = await deploy(await site('release-M'), { name: 'promote-busy' });
  await deploy(await site('release-N'), { projectId: a.projectId });
  const [, earlier] = await releasesOf(a.projectId);
  const pkg = JSON.stringify({ name: 'slow', scripts: { build: 'node build.js' } });
  const build =
    "setTimeout(() => { require('fs').mkdirSync('dist'); " +
    "require('fs').writeFileSync('dist/index.html', '<!--release-O--><!--release-O-->'); }, 2000);";
  const slow = await h.upload(
    token,
    `/api/v1/projects/${a.projectId}/local-to-live`,
    await zipOf({ 'package.json': pkg, 'build.js': build }),
  );
  const running = (await slow.json()).operation.id;
  const busy = await promote(a.projectId, earlier.id);
  assert.is(busy.status, 409, JSON.stringify(busy.body));
  assert.equal([busy.body.error.code, busy.body.error.details.operation_id], ['deployment_in_progress', running]);
  assert.is((await h.waitFor(token, running, undefined, 60_000)).status, 'succeeded');
  assert.equal(markersOf((await h.site(a.host)).body), ['release-O', 'release-O']);
  const listed = (await h.get(token, `/api/v1/operations?kind=promote&project_id=${a.projectId}`)).body;
  assert.equal(listed.operations, [], 'the refused promote started nothing');
});

test('retention: releases beyond the plan count are pruned, files removed, and no longer promotable', async () => {
  const first = await deploy(await site('release-F'), { name: 'promote-retention' });
  for (const m of ['G', 'H', 'I', 'J', 'K']) await deploy(await site(`release-${m}`), { projectId: first.projectId });
  // Pruning follows the switch's commit (the operation may be seen succeeded a moment before).
  let releases = await releasesOf(first.projectId);
  for (let i = 0; i < 100 && releases[5]?.promotable; i++) {
    await new Promise((r) => setTimeout(r, 100));
    releases = await releasesOf(first.projectId);
  }
  assert.is(releases.length, 6);
  const oldest = releases[5];
  assert.equal(
    releases.map((r) => r.promotable),
    [false, true, true, true, true, false],
    'the live one and four earlier are kept (pro keeps 5)',
  );
  // Removed right after the switch committed (the operation may be seen succeeded a moment before).
  const dir = join(h.dataDir, 'releases', oldest.id);
  for (let i = 0; i < 50 && (await stat(dir).catch(() => null)); i++) await new Promise((r) => setTimeout(r, 100));
  assert.is(await stat(dir).catch(() => null), null, 'the pruned release directory is removed');
  const res = await promote(first.projectId, oldest.id);
  assert.is(res.status, 409);
  assert.equal([res.body.error.code, res.body.error.details.reason], ['not_promotable', 'not_kept']);
  assert.equal(markersOf((await h.site(first.host)).body), ['release-K', 'release-K']);
});

test('the releases list filters by target: production, preview (none yet); others are refused', async () => {
  const a = await deploy(await site('release-L'), { name: 'promote-target' });
  assert.is((await releasesOf(a.projectId, '?target=production')).length, 1);
  assert.equal(await releasesOf(a.projectId, '?target=preview'), []);
  const bad = await h.get(token, `/api/v1/projects/${a.projectId}/releases?target=staging`);
  assert.is(bad.status, 400);
  assert.is(bad.body.error.code, 'invalid_request');
});

test('promote of a Node.js release starts it again from its kept release', async () => {
  const server = (marker: string) =>
    `require('http').createServer((q, s) => s.end(${JSON.stringify(marker)})).listen(Number(process.env.PORT));`;
  const pkg = JSON.stringify({ name: 'app', version: '1.0.0', scripts: { start: 'node server.js' } });
  const one = await deploy(await zipOf({ 'package.json': pkg, 'server.js': server('node-one') }), {
    name: 'promote-node',
  });
  assert.is((await h.site(one.host)).body, 'node-one');
  await deploy(await zipOf({ 'package.json': pkg, 'server.js': server('node-two') }), { projectId: one.projectId });
  assert.is((await h.site(one.host)).body, 'node-two');
  const [, earlier] = await releasesOf(one.projectId);
  assert.is(earlier.promotable, true);
  const res = await promote(one.projectId, earlier.id);
  assert.is(res.status, 202, JSON.stringify(res.body));
  const op = await h.waitFor(token, res.body.operation.id, undefined, 30_000);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is(op.stages.build.skipped, true);
  assert.is((await h.site(one.host)).body, 'node-one');
});

/** A site whose build script writes dist/index.html holding `marker`. */
const builtSite = (marker: string) =>
  zipOf({
    'package.json': JSON.stringify({
      name: 'built',
      scripts: {
        build: `node -e "const f=require('fs');f.mkdirSync('dist');f.writeFileSync('dist/index.html','${marker}')"`,
      },
    }),
  });

test('promote of a static release built into its output directory (dist/) ships no build of its own', async () => {
  const created = await fetch(`${h.api}/api/v1/projects/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'promote-dist', settings: { output_directory: 'dist' } }),
  });
  const { id: projectId } = await created.json();
  assert.is(created.status, 201);
  const { host } = await deploy(await builtSite('page-A'), { projectId });
  await deploy(await builtSite('page-B'), { projectId });
  assert.is((await h.site(host)).body, 'page-B');
  const [, first] = await releasesOf(projectId);
  assert.is(first.promotable, true, JSON.stringify(first));
  const res = await promote(projectId, first.id);
  assert.is(res.status, 202, JSON.stringify(res.body));
  const op = await h.waitFor(token, res.body.operation.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is((await h.site(host)).body, 'page-A');
  // The upload holds no dist/: nothing is built or packed for the promote, which resumes what was kept.
  assert.is(op.build_log, null, JSON.stringify(op.build_log));
  assert.match(op.stages.build.skip_reason, `promote: release ${first.id}`);
  assert.is((await h.get(token, `/api/v1/projects/${projectId}/builds`)).body.builds.length, 2);
});

test.run();
