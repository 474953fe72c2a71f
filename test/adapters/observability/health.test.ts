// legs: db
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startRoles } from '../../../adapters/cli/start.js';
import { buildEdge } from '../../../adapters/edge/edge.js';
import { notFoundPage } from '../../../adapters/edge/pages.js';
import { metricsOf } from '../../../adapters/observability/metrics.js';
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

test('GET /readyz checks the database and the storage, and answers 503 naming what is down, never why', async () => {
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
    // Why names paths, hosts and ports: without a metrics token nobody is told.
    assert.is(down.json().checks['storage-local'], 'down');
    assert.not.match(down.body, /ENOENT|\/tmp|hoist-test/);

    mkdirSync(tmp);
    assert.is((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
  } finally {
    await t.close();
  }
});

test('with metricsToken set, /readyz says what is down to anyone, and why only with the token', async () => {
  const t = await testApi({ metricsToken: 's3cret-metrics-token' });
  try {
    const ok = await t.app.inject({ method: 'GET', url: '/readyz' });
    assert.is(ok.statusCode, 200);
    // On PostgreSQL the change feed (changes-postgres) is checked too.
    const others = Object.keys(ok.json().checks).filter((id) => id !== 'database' && id !== 'storage-local');
    assert.equal(ok.json().checks, {
      database: 'ok',
      'storage-local': 'ok',
      ...Object.fromEntries(others.map((id) => [id, 'ok'])),
    });

    const tmp = join(t.kernel.config.dataDir, 'storage', '.tmp');
    rmSync(tmp, { recursive: true, force: true });
    for (const authorization of [undefined, 'Bearer s3cret-metrics-tokeX', 's3cret-metrics-token']) {
      const headers = authorization ? { authorization } : {};
      const down = await t.app.inject({ method: 'GET', url: '/readyz', headers });
      assert.is(down.statusCode, 503, String(authorization));
      assert.equal(down.json(), {
        status: 'not_ready',
        role: 'api',
        checks: { database: 'ok', 'storage-local': 'down', ...Object.fromEntries(others.map((id) => [id, 'ok'])) },
      });
      assert.not.match(down.body, /ENOENT|\/tmp|hoist-test/);
    }
    const right = await t.app.inject({
      method: 'GET',
      url: '/readyz',
      headers: { authorization: 'Bearer s3cret-metrics-token' },
    });
    assert.is(right.statusCode, 503);
    assert.match(right.json().checks['storage-local'], /ENOENT/);
    mkdirSync(tmp);
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
    assert.match(
      text,
      /hoist_http_request_duration_seconds_bucket\{le="[^"]+",role="api",method="GET",route="\/api\/v1\/me"\}/,
    );
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
    const wrong = await t.app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: 'Bearer s3cret-metrics-tokeX' },
    });
    assert.is(wrong.statusCode, 401);
    const right = await t.app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: 'Bearer s3cret-metrics-token' },
    });
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

test(
  'the public edge port answers no health, readiness or metrics for a Host naming ' + "no project: the edge's 404 page",
  async () => {
    const kernel = await testKernel({ metricsToken: 'edge-metrics-token' });
    const edge = await buildEdge(kernel);
    try {
      const hosts = [
        '127.0.0.1:8080',
        '127.0.0.1',
        'localhost:8080',
        'localhost',
        'evil.example',
        '[::1]:8080',
        'some-project.localhost',
      ];
      for (const host of hosts) {
        for (const url of ['/healthz', '/readyz', '/metrics', '/metrics?x=1', '/readyz/']) {
          for (const headers of [{ host }, { host, authorization: 'Bearer edge-metrics-token' }]) {
            const res = await edge.inject({ method: 'GET', url, headers });
            assert.is(res.statusCode, 404, `${host}${url}`);
            assert.match(res.headers['content-type'] as string, /^text\/html/, `${host}${url}`);
            assert.is(res.body, notFoundPage(), `${host}${url}: the ordinary 404 page`);
            assert.not.match(res.body, /hoist_|process_|checks|database/);
          }
        }
      }
      // No Host at all (HTTP/1.0) is no different.
      const bare = await edge.inject({ method: 'GET', url: '/metrics', headers: { host: '' } });
      assert.is(bare.statusCode, 404);
      // The requests were still counted, under the edge's role (read where metrics live).
      const { registry } = metricsOf(kernel);
      assert.match(
        await registry.metrics(),
        /hoist_http_requests_total\{role="edge",method="GET",route="\/\*",status="404"\}/,
      );
    } finally {
      await edge.close();
      await kernel.stop();
    }
  },
);

test(
  'an edge running without the API answers /healthz, /readyz and /metrics only on ' + 'its loopback admin listener',
  async () => {
    // The public address is every interface; the admin listener stays on loopback (edgeAdminHost's default).
    const kernel = await testKernel({ host: '0.0.0.0', edgeAdminPort: 0 });
    const running = await startRoles(['edge'], kernel);
    try {
      assert.ok(running.edgeAdmin, 'the edge has an admin listener');
      assert.match(running.edgeAdmin!, /^http:\/\/127\.0\.0\.1:\d+$/);
      const health = await fetch(`${running.edgeAdmin}/healthz`);
      assert.is(health.status, 200);
      assert.equal(await health.json(), { status: 'ok', role: 'edge' });
      const ready = await fetch(`${running.edgeAdmin}/readyz`);
      assert.is(ready.status, 200);
      assert.is((await ready.json()).checks.database, 'ok');

      const edgePort = new URL(running.urls.edge!).port;
      for (const path of ['/healthz', '/readyz', '/metrics']) {
        const res = await fetch(`http://127.0.0.1:${edgePort}${path}`);
        assert.is(res.status, 404, path);
        assert.is(await res.text(), notFoundPage());
      }
      // The public port's 404s are in the admin listener's metrics.
      const text = await (await fetch(`${running.edgeAdmin}/metrics`)).text();
      assert.match(text, /hoist_http_requests_total\{role="edge",method="GET",route="\/\*",status="404"\} 3/);
    } finally {
      await running.close();
    }
  },
);

test(
  'with the API in the process (hoist start), the edge opens no admin listener: the ' +
    "API's root serves the edge's figures",
  async () => {
    const kernel = await testKernel({ workerPort: 0, edgeAdminPort: 0 });
    const running = await startRoles(['api', 'edge'], kernel);
    try {
      assert.is(running.edgeAdmin, undefined);
      await fetch(`${running.urls.edge}/metrics`);
      const text = await (await fetch(`${running.urls.api}/metrics`)).text();
      assert.match(text, /hoist_http_requests_total\{role="edge",method="GET",route="\/\*",status="404"\} 1/);
    } finally {
      await running.close();
    }
  },
);

test.run();
