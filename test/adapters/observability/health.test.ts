// legs: db
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startRoles } from '../../../adapters/cli/start.js';
import { buildEdge } from '../../../adapters/edge/edge.js';
import { testApi } from '../../helpers/api.js';
import { testKernel } from '../../helpers/kernel.js';

test('GET /healthz answers 200 while the process lives', async () => {
  const t = await testApi();
  try {
    const res = await t.app.inject({ method: 'GET', url: '/healthz' });
    assert.is(res.statusCode, 200);
    assert.equal(res.json(), { status: 'ok', role: 'api' });
  } finally {
    await t.close();
  }
});

test('GET /readyz checks the database and the storage, and answers 503 naming what is down', async () => {
  const t = await testApi();
  try {
    const ok = await t.app.inject({ method: 'GET', url: '/readyz' });
    assert.is(ok.statusCode, 200);
    assert.is(ok.json().status, 'ready');
    assert.is(ok.json().checks.database, 'ok');
    assert.is(ok.json().checks['storage-local'], 'ok');

    const tmp = join(t.kernel.config.dataDir, 'storage', '.tmp');
    rmSync(tmp, { recursive: true, force: true });
    const down = await t.app.inject({ method: 'GET', url: '/readyz' });
    assert.is(down.statusCode, 503);
    assert.is(down.json().status, 'not_ready');
    assert.is(down.json().checks.database, 'ok');
    assert.match(down.json().checks['storage-local'], /ENOENT/);

    mkdirSync(tmp);
    assert.is((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
  } finally {
    await t.close();
  }
});

test('GET /metrics: request counts by route, operations, live releases, queue depth, in Prometheus text', async () => {
  const t = await testApi();
  try {
    const a = await t.account();
    await t.app.inject({ method: 'GET', url: '/api/v1/me', headers: a.auth });
    await t.app.inject({ method: 'GET', url: '/api/v1/nothing-here' });
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    assert.is(res.statusCode, 200);
    assert.match(res.headers['content-type'] as string, /^text\/plain/);
    const text = res.body;
    assert.match(text, /hoist_http_requests_total\{role="api",method="GET",route="\/api\/v1\/me",status="200"\} 1/);
    assert.match(text, /hoist_http_requests_total\{role="api",method="GET",route="unmatched",status="404"\} 1/);
    assert.match(text, /hoist_http_request_duration_seconds_bucket\{le="[^"]+",role="api",method="GET",route="\/api\/v1\/me"\}/);
    assert.match(text, /^hoist_live_releases 0$/m);
    assert.match(text, /^hoist_queue_jobs\{state="waiting"\} 0$/m);
    assert.match(text, /# TYPE hoist_operations gauge/);
    assert.match(text, /# TYPE hoist_stage_duration_seconds histogram/);
    assert.match(text, /hoist_process_resident_memory_bytes/);
  } finally {
    await t.close();
  }
});

test('with metricsToken set, /metrics needs it (401 with the error body otherwise); health stays open', async () => {
  const t = await testApi({ metricsToken: 's3cret-metrics-token' });
  try {
    const none = await t.app.inject({ method: 'GET', url: '/metrics' });
    assert.is(none.statusCode, 401);
    assert.is(none.json().error.code, 'unauthorized');
    assert.ok(none.json().error.request_id);
    assert.not.match(none.body, /hoist_http/);
    const wrong = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer s3cret-metrics-tokeX' } });
    assert.is(wrong.statusCode, 401);
    const right = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer s3cret-metrics-token' } });
    assert.is(right.statusCode, 200);
    assert.match(right.body, /hoist_http_requests_total/);
    assert.is((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
  } finally {
    await t.close();
  }
});

test('a worker running without the API answers /healthz, /readyz and /metrics on its own port', async () => {
  const kernel = await testKernel({ workerPort: 0 });
  const running = await startRoles(['worker'], kernel);
  try {
    const url = /health on (\S+)$/.exec(running.urls.worker ?? '')?.[1];
    assert.ok(url, running.urls.worker);
    const health = await fetch(`${url}/healthz`);
    assert.is(health.status, 200);
    assert.equal(await health.json(), { status: 'ok', role: 'worker' });
    const ready = await fetch(`${url}/readyz`);
    assert.is(ready.status, 200);
    assert.is((await ready.json()).checks.database, 'ok');
    assert.match(await (await fetch(`${url}/metrics`)).text(), /hoist_stage_duration_seconds/);
  } finally {
    await running.close();
  }
});

test('the edge answers the health routes on its own address, and leaves project hosts theirs', async () => {
  const kernel = await testKernel();
  const edge = await buildEdge(kernel);
  try {
    const own = await edge.inject({ method: 'GET', url: '/healthz', headers: { host: '127.0.0.1:8080' } });
    assert.is(own.statusCode, 200);
    assert.equal(own.json(), { status: 'ok', role: 'edge' });
    const ready = await edge.inject({ method: 'GET', url: '/readyz', headers: { host: '127.0.0.1:8080' } });
    assert.is(ready.statusCode, 200);
    assert.is(ready.json().checks.database, 'ok');
    assert.match((await edge.inject({ method: 'GET', url: '/metrics', headers: { host: '127.0.0.1' } })).body, /hoist_http_requests_total\{role="edge"/);
    // On a project's host, /healthz is the project's own path (here: no such project, so the edge's 404 page).
    const project = await edge.inject({ method: 'GET', url: '/healthz', headers: { host: 'some-project.localhost' } });
    assert.is(project.statusCode, 404);
    assert.match(project.headers['content-type'] as string, /text\/html/);
  } finally {
    await edge.close();
    await kernel.stop();
  }
});

test.run();
