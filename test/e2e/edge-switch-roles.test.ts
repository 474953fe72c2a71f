// api, worker and two edges as separate processes on PostgreSQL (changes=postgres: LISTEN/NOTIFY) and
// NATS: readers keep fetching from both edges while 20 deploys switch releases. No response mixes two
// releases, and every edge serves the new release soon after the operation says `succeeded` (the
// delays are printed; the assertion allows seconds, so a loaded machine does not fail it).
import http from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { zipOf } from '../helpers/live.js';
import { cluster, type Cluster, type RoleProcess } from '../helpers/roles.js';

const DEPLOYS = 20;
let c: Cluster;
let api: RoleProcess;
let edges: RoleProcess[];
let token: string;

test.before(async () => {
  c = await cluster();
  [api, ...edges] = await Promise.all([c.start('api'), c.start('edge'), c.start('edge'), c.start('worker')]);
  edges = edges.slice(0, 2);
  token = await c.login(api.url);
});
test.after(async () => c?.close());

/** A release whose page starts and ends with its marker (markers of one length: the page keeps its size). */
const site = (n: number) => {
  const marker = `release-${String(n).padStart(3, '0')}`;
  return zipOf({ 'index.html': `<!--${marker}--><p>${'x'.repeat(8000)}</p><!--${marker}-->` });
};

/** GET / of `host` from `edge`: status and the markers the body holds. */
const fetchPage = (edge: string, host: string) =>
  new Promise<{ status: number; markers: string[] }>((resolve, reject) => {
    const url = new URL(edge);
    http
      .get({ host: url.hostname, port: url.port, path: '/', headers: { host } }, (res) => {
        let body = '';
        res
          .on('data', (d) => (body += d))
          .on('end', () => resolve({ status: res.statusCode!, markers: body.match(/release-\d{3}/g) ?? [] }));
      })
      .on('error', reject);
  });

async function deploy(path: string, n: number, name?: string) {
  const form = new FormData();
  if (name) form.append('name', name);
  form.append('file', new Blob([new Uint8Array(await site(n))]), 'site.zip');
  const res = await fetch(`${api.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: form,
  });
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  return body;
}

/** Polls the operation every 10 ms until it is terminal; the moment it was first seen succeeded. */
async function succeeded(operationId: string): Promise<number> {
  for (;;) {
    const res = await fetch(`${api.url}/api/v1/operations/${operationId}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const op = await res.json();
    if (op.status === 'succeeded') return performance.now();
    assert.ok(['queued', 'running'].includes(op.status), JSON.stringify(op));
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('a reader never sees a mix of releases, and every edge process sees each switch soon', async () => {
  const first = await deploy('/api/v1/local-to-live', 0, 'switching-site');
  await succeeded(first.operation.id);
  const projectId: string = first.project.id;
  const host = `${new URL(first.project.url).hostname}:1`;

  // The first release reaches each edge process a moment after `succeeded` (a notification away).
  for (const edge of edges) {
    const end = performance.now() + 5000;
    while ((await fetchPage(edge.url, host)).status !== 200) {
      assert.ok(performance.now() < end, 'the first release is served within 5 s');
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  // Readers: one per edge, each recording when it first saw each marker.
  const seen = edges.map(() => new Map<string, number>());
  let stop = false;
  let responses = 0;
  const readers = edges.map(async (edge, i) => {
    while (!stop) {
      const page = await fetchPage(edge.url, host);
      responses++;
      assert.is(page.status, 200);
      assert.is(page.markers.length, 2, JSON.stringify(page));
      assert.is(page.markers[0], page.markers[1], `a response mixes releases: ${JSON.stringify(page)}`);
      if (!seen[i].has(page.markers[0])) seen[i].set(page.markers[0], performance.now());
    }
  });

  const delays: number[] = [];
  try {
    for (let n = 1; n <= DEPLOYS; n++) {
      const marker = `release-${String(n).padStart(3, '0')}`;
      const { operation } = await deploy(`/api/v1/projects/${projectId}/local-to-live`, n);
      const at = await succeeded(operation.id);
      const end = performance.now() + 5000;
      while (!seen.every((s) => s.has(marker))) {
        assert.ok(performance.now() < end, `an edge did not serve ${marker} within 5 s of succeeded`);
        await new Promise((r) => setTimeout(r, 5));
      }
      for (const s of seen) delays.push(Math.max(0, s.get(marker)! - at));
    }
  } finally {
    stop = true;
    await Promise.all(readers);
  }
  delays.sort((a, b) => a - b);
  const pct = (p: number) => delays[Math.min(delays.length - 1, Math.floor(p * delays.length))].toFixed(1);
  console.log(
    `  switch seen by an edge process after succeeded (${delays.length} samples, ${responses} responses): ` +
      `median ${pct(0.5)} ms, p95 ${pct(0.95)} ms, max ${pct(1)} ms`,
  );
});

test.run();
