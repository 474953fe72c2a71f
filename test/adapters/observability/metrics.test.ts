import { Registry } from 'prom-client';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { requestMetrics, RequestTally } from '../../../adapters/observability/metrics.js';

// Requests as [role, method, route, status, seconds]: on bucket bounds, between them, past the last, zero.
const answered: [string, string, string, number, number][] = [
  ['edge', 'GET', '/*', 200, 0.0004],
  ['edge', 'GET', '/*', 304, 0.005],
  ['edge', 'GET', '/*', 200, 0.0051],
  ['edge', 'HEAD', '/*', 404, 0],
  ['api', 'GET', '/api/v1/me', 200, 0.3],
  ['api', 'POST', '/api/v1/projects/', 201, 31],
  ['edge', 'GET', '/*', 502, 2.5],
  ['api', 'GET', '/api/v1/me', 401, 12],
  // A role's route first seen after another role's.
  ['edge', 'POST', '/*', 405, 0.001],
];

/** The exposition text of a registry whose requests are counted with inc and observe, one call each. */
async function direct(requests: typeof answered, reads: number[]) {
  const registry = new Registry();
  const m = requestMetrics(registry);
  const texts: string[] = [];
  for (const [i, [role, method, route, status, seconds]] of requests.entries()) {
    if (reads.includes(i)) texts.push(await registry.metrics());
    m.requests.inc({ role, method, route, status: String(status) });
    m.requestSeconds.observe({ role, method, route }, seconds);
  }
  texts.push(await registry.metrics());
  return texts;
}

/** The same through a RequestTally, read (scraped) before request `reads[i]` and at the end. */
async function tallied(requests: typeof answered, reads: number[]) {
  const registry = new Registry();
  const m = requestMetrics(registry);
  const tally = new RequestTally(m.requests, m.requestSeconds);
  const texts: string[] = [];
  for (const [i, request] of requests.entries()) {
    if (reads.includes(i)) texts.push(await registry.metrics());
    tally.count(...request);
  }
  texts.push(await registry.metrics());
  return texts;
}

test('a tally folded in at each scrape exposes what inc and observe per request expose', async () => {
  for (const reads of [[], [0], [3], [1, 2, 5, 7]]) {
    const want = await direct(answered, reads);
    const got = await tallied(answered, reads);
    assert.equal(got, want, `scraped before requests ${reads.join(', ')}`);
  }
  assert.match((await direct(answered, []))[0], /hoist_http_request_duration_seconds_bucket\{le="0.005",role="edge"/);
});

test('a series read alone (getSingleMetric) takes in the tally too, once', async () => {
  const registry = new Registry();
  const m = requestMetrics(registry);
  const tally = new RequestTally(m.requests, m.requestSeconds);
  tally.count('edge', 'GET', '/*', 200, 0.001);
  tally.count('edge', 'GET', '/*', 200, 0.001);
  const values = async () => (await m.requests.get()).values.map((v) => v.value);
  assert.equal(await values(), [2]);
  assert.equal(await values(), [2]);
  const seconds = (await m.requestSeconds.get()).values.find((v) => v.metricName?.endsWith('_count'));
  assert.is(seconds?.value, 2);
});

test.run();
