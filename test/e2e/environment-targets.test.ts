// legs: db
// Environment variables per target: a name may have a value for all deployments, for production and for previews;
// a deployment takes its own target's value, else the one for all. A preview that took a targeted value is not
// promoted as it runs; a deploy hook builds a promoted preview's version again for production.
import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { EnvironmentSnapshot } from '../../core/entities/environment-snapshot.js';
import { EnvironmentVariable } from '../../core/entities/environment-variable.js';
import { ENVIRONMENT_SERVICE, type EnvironmentService } from '../../core/environment/environment-service.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
test.before(async () => {
  h = await liveHoist();
  ({ token } = await h.login('pro'));
});
test.after(async () => h?.close());

const call = (method: string, path: string, body?: unknown) => h.call(token, method, path, body);
const em = () => h.running.kernel.orm.em.fork();

/** A site whose build writes what it saw of API_URL, SHARED and PREVIEW_ONLY into dist/index.html. */
const site = () =>
  zipOf({
    'package.json': JSON.stringify({ name: 'targets', scripts: { build: 'node build.js' } }),
    'build.js': `const fs = require('fs'), e = process.env;
fs.mkdirSync('dist');
fs.writeFileSync('dist/index.html', [e.API_URL, e.SHARED, e.PREVIEW_ONLY].map((v) => v ?? '-').join('|'));`,
  });

/** Makes a project whose previews are public. */
async function project(name: string) {
  const made = await call('POST', '/api/v1/projects/', { name });
  assert.is(made.status, 201, JSON.stringify(made.body));
  const patched = await call('PATCH', `/api/v1/projects/${made.body.id}/`, { preview_visibility: 'public' });
  assert.is(patched.status, 200, JSON.stringify(patched.body));
  return { id: made.body.id as string, host: hostOf(made.body.url) };
}

/** Uploads the site to the project (as a preview with `fields`); resolves the 202 body and the finished operation. */
async function deploy(projectId: string, fields: Record<string, string> = {}) {
  const res = await h.upload(token, `/api/v1/projects/${projectId}/local-to-live`, await site(), fields);
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  const op = await h.waitFor(token, body.operation.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  return { body, op };
}

const put = (projectId: string, name: string, body: object) =>
  call('PUT', `/api/v1/projects/${projectId}/environment/${name}`, body);
const listed = async (projectId: string) =>
  (await call('GET', `/api/v1/projects/${projectId}/environment`)).body.environment.map((v: any) => [
    v.name,
    v.target,
    v.scope,
  ]);

test('a deployment takes its target value, else the one for all; a targeted preview is not promoted', async () => {
  const p = await project('env-targets');
  for (const [name, value, target] of [
    ['API_URL', 'https://all', undefined],
    ['API_URL', 'https://prod', 'production'],
    ['API_URL', 'https://staging', 'preview'],
    ['SHARED', 'shared', undefined],
    ['PREVIEW_ONLY', 'yes', 'preview'],
  ]) {
    const res = await put(p.id, name!, { value, ...(target && { target }) });
    assert.is(res.status, 201, JSON.stringify(res.body));
    assert.is(res.body.target, target ?? 'all');
  }
  // The same name and target again replaces that value only.
  assert.is((await put(p.id, 'API_URL', { value: 'https://staging', target: 'preview', scope: 'build' })).status, 200);
  assert.equal(await listed(p.id), [
    ['API_URL', 'all', 'both'],
    ['API_URL', 'preview', 'build'],
    ['API_URL', 'production', 'both'],
    ['PREVIEW_ONLY', 'preview', 'both'],
    ['SHARED', 'all', 'both'],
  ]);

  await deploy(p.id);
  assert.is((await h.site(p.host)).body, 'https://prod|shared|-');
  const preview = await deploy(p.id, { target: 'preview' });
  assert.is((await h.site(hostOf(preview.body.preview.url))).body, 'https://staging|shared|yes');
  const snapshot = await em().findOneOrFail(EnvironmentSnapshot, { operationId: preview.op.id });
  assert.is(snapshot.targeted, true);

  // It built with preview values: promoting it as it runs is refused, and the list says so.
  const releases = (await call('GET', `/api/v1/projects/${p.id}/releases?target=preview`)).body.releases;
  assert.equal(
    releases.map((r: any) => [r.operation_id, r.promotable]),
    [[preview.op.id, false]],
  );
  const live = (await h.site(p.host)).headers['x-hoist-release'];
  const promote = await h.post(token, `/api/v1/projects/${p.id}/releases/${releases[0].id}/promote`);
  assert.is(promote.status, 409, JSON.stringify(promote.body));
  assert.equal([promote.body.error.code, promote.body.error.details.reason], ['not_promotable', 'preview_environment']);
  assert.is((await h.site(p.host)).headers['x-hoist-release'], live, 'the live release stays');

  // Removing one target's value leaves the others; removing the name removes them all.
  assert.is((await call('DELETE', `/api/v1/projects/${p.id}/environment/API_URL?target=preview`)).status, 204);
  assert.is((await call('DELETE', `/api/v1/projects/${p.id}/environment/API_URL?target=preview`)).status, 404);
  assert.is((await call('DELETE', `/api/v1/projects/${p.id}/environment/SHARED?target=preview`)).status, 404);
  assert.equal(
    (await listed(p.id)).filter((v: string[]) => v[0] === 'API_URL'),
    [
      ['API_URL', 'all', 'both'],
      ['API_URL', 'production', 'both'],
    ],
  );
  assert.is((await call('DELETE', `/api/v1/projects/${p.id}/environment/API_URL`)).status, 204);
  assert.equal(
    (await listed(p.id)).map((v: string[]) => v[0]),
    ['PREVIEW_ONLY', 'SHARED'],
  );
});

test('a bad target is refused with 400 and changes nothing', async () => {
  const p = await project('env-bad-targets');
  assert.is((await put(p.id, 'KEEP', { value: 'kept', target: 'preview' })).status, 201);
  for (const target of ['staging', 'Production', '', 7, null]) {
    const res = await put(p.id, 'KEEP', { value: 'changed', target });
    assert.is(res.status, 400, `${JSON.stringify(target)}: ${JSON.stringify(res.body)}`);
    assert.is(res.body.error.code, 'invalid_request');
  }
  const del = await call('DELETE', `/api/v1/projects/${p.id}/environment/KEEP?target=staging`);
  assert.is(del.status, 400, JSON.stringify(del.body));
  const rows = await em().find(EnvironmentVariable, { projectId: p.id });
  assert.equal(
    rows.map((r) => [r.name, r.target]),
    [['KEEP', 'preview']],
  );
  // The stored value is the first one: it opens for a preview.
  const environment = h.running.kernel.get<EnvironmentService>(ENVIRONMENT_SERVICE);
  assert.equal(await environment.forRuntime(randomUUID(), p.id, 'preview'), { KEEP: 'kept' });
  assert.equal(await environment.forRuntime(randomUUID(), p.id, 'production'), {});
});

test('a value moved to another target does not decrypt', async () => {
  const p = await project('env-moved-target');
  assert.is((await put(p.id, 'TOKEN', { value: 'staging-token', target: 'preview' })).status, 201);
  await em().nativeUpdate(EnvironmentVariable, { projectId: p.id, name: 'TOKEN' }, { target: 'production' });
  const environment = h.running.kernel.get<EnvironmentService>(ENVIRONMENT_SERVICE);
  const err = await environment.forRuntime(randomUUID(), p.id, 'production').then(
    () => null,
    (e: Error & { code?: string }) => e,
  );
  assert.is(err?.code, 'environment_undecryptable');
  assert.not.match(err!.message, 'staging-token');
});

test('a deploy hook builds a promoted preview again for production', async () => {
  const p = await project('env-hook-after-preview');
  await deploy(p.id);
  const preview = await deploy(p.id, { target: 'preview' });
  const [release] = (await call('GET', `/api/v1/projects/${p.id}/releases?target=preview`)).body.releases;
  const promote = await h.post(token, `/api/v1/projects/${p.id}/releases/${release.id}/promote`);
  assert.is(promote.status, 202, JSON.stringify(promote.body));
  assert.is((await h.waitFor(token, promote.body.operation.id)).status, 'succeeded');
  assert.is((await h.site(p.host)).headers['x-hoist-release'], release.id);

  const hook = await call('POST', `/api/v1/projects/${p.id}/deploy-hooks`, { name: 'rebuild' });
  const fired = await fetch(hook.body.url, { method: 'POST' });
  const body = await fired.json();
  assert.is(fired.status, 202, JSON.stringify(body));
  const op = await h.waitFor(token, body.operation.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is(op.result.live, true, JSON.stringify(op.result));
  assert.is(op.version_id, preview.op.version_id, 'the same version');
  assert.is((await h.site(p.host)).headers['x-hoist-release'], op.result.deployment_id, 'live at once');
  const [latest] = (await call('GET', `/api/v1/projects/${p.id}/releases`)).body.releases;
  assert.equal([latest.id, latest.target, latest.source], [op.result.deployment_id, 'production', 'deploy_hook']);
});

test('a redeployed preview build keeps its preview values out of production: not promoted', async () => {
  const p = await project('env-redeploy-preview');
  assert.is((await put(p.id, 'API_URL', { value: 'https://prod', target: 'production' })).status, 201);
  assert.is((await put(p.id, 'API_URL', { value: 'https://staging', target: 'preview' })).status, 201);
  await deploy(p.id);
  const preview = await deploy(p.id, { target: 'preview' });
  const [release] = (await call('GET', `/api/v1/projects/${p.id}/releases?target=preview`)).body.releases;
  // Retrying the preview deployment ships its build (made with the preview values) again; a static release takes
  // no variables of its own, so only its build tells what it was made with.
  const retry = await h.post(token, `/api/v1/projects/${p.id}/deployments/${release.id}/retry`);
  assert.is(retry.status, 202, JSON.stringify(retry.body));
  const op = await h.waitFor(token, retry.body.operation.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is(op.result.live, false, 'a preview again');
  assert.is((await h.site(hostOf(op.result.url))).body, 'https://staging|-|-');
  const copy = (await call('GET', `/api/v1/projects/${p.id}/releases?target=preview`)).body.releases.find(
    (r: any) => r.operation_id === op.id,
  );
  assert.is(copy.promotable, false, JSON.stringify(copy));
  const live = (await h.site(p.host)).headers['x-hoist-release'];
  const promote = await h.post(token, `/api/v1/projects/${p.id}/releases/${copy.id}/promote`);
  assert.is(promote.status, 409, JSON.stringify(promote.body));
  assert.equal([promote.body.error.code, promote.body.error.details.reason], ['not_promotable', 'preview_environment']);
  assert.is((await h.site(p.host)).headers['x-hoist-release'], live, 'the live release stays');
  assert.is((await h.site(p.host)).body, 'https://prod|-|-');
  assert.ok(preview.op.id !== op.id);
});

test('a redeployed production build of a preview version stays production: never a preview', async () => {
  const p = await project('env-redeploy-hook-build');
  await deploy(p.id);
  await deploy(p.id, { target: 'preview' });
  const [release] = (await call('GET', `/api/v1/projects/${p.id}/releases?target=preview`)).body.releases;
  const promote = await h.post(token, `/api/v1/projects/${p.id}/releases/${release.id}/promote`);
  assert.is(promote.status, 202, JSON.stringify(promote.body));
  assert.is((await h.waitFor(token, promote.body.operation.id)).status, 'succeeded');
  // Now the values differ per target; a deploy hook builds the promoted preview's version for production.
  assert.is((await put(p.id, 'API_URL', { value: 'https://prod-only', target: 'production' })).status, 201);
  assert.is((await put(p.id, 'API_URL', { value: 'https://staging', target: 'preview' })).status, 201);
  const hook = await call('POST', `/api/v1/projects/${p.id}/deploy-hooks`, { name: 'rebuild' });
  const fired = await (await fetch(hook.body.url, { method: 'POST' })).json();
  const built = await h.waitFor(token, fired.operation.id);
  assert.is(built.result.live, true, JSON.stringify(built.result));
  assert.is((await h.site(p.host)).body, 'https://prod-only|-|-');

  // Retrying that deployment ships its build, made with the production values: to production, not to a preview.
  const retry = await h.post(token, `/api/v1/projects/${p.id}/deployments/${built.result.deployment_id}/retry`);
  assert.is(retry.status, 202, JSON.stringify(retry.body));
  assert.not.ok(retry.body.preview, JSON.stringify(retry.body));
  const op = await h.waitFor(token, retry.body.operation.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is(op.result.live, true, JSON.stringify(op.result));
  assert.is(op.result.build_id, built.result.build_id);
  assert.is((await h.site(p.host)).headers['x-hoist-release'], op.result.deployment_id);
  const previews = (await call('GET', `/api/v1/projects/${p.id}/releases?target=preview`)).body.releases;
  assert.equal(
    previews.filter((r: any) => r.operation_id === op.id),
    [],
    'no preview serves the production build',
  );
});

test.run();
