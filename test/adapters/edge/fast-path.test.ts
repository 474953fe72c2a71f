// legs: db
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { FastifyInstance } from 'fastify';
import { buildEdge } from '../../../adapters/edge/edge.js';
import type { Kernel } from '../../../adapters/kernel.js';
import { metricsOf } from '../../../adapters/observability/metrics.js';
import { accessProofs } from '../../../core/access/site-access-service.js';
import { Deployment } from '../../../core/entities/deployment.js';
import { Project } from '../../../core/entities/project.js';
import { TOKEN_SERVICE } from '../../../core/ports/token-service.js';
import { HOST_ROUTES } from '../../../core/deployments/host-routes.js';
import type { RoutingTable } from '../../../core/deployments/routing-table.js';
import { testKernel } from '../../helpers/kernel.js';

let kernel: Kernel;
let edge: FastifyInstance;
let port: number;
const lines: string[] = [];

/** A project with a live static release of `files` (no file index: the disk is read); returns the project id. */
async function site(slug: string, visibility: string, files: Record<string, string>, passwordHash?: string) {
  const root = join(kernel.config.dataDir, 'sites', slug);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(root, name, '..'), { recursive: true });
    writeFileSync(join(root, name), text);
  }
  const accountId = randomUUID();
  const project = Object.assign(new Project(), { accountId, name: slug, slug, visibility });
  Object.assign(project, { createdAt: new Date(), updatedAt: new Date(), accessPasswordHash: passwordHash ?? null });
  const d = Object.assign(new Deployment(), {
    accountId,
    projectId: project.id,
    versionId: randomUUID(),
    buildId: randomUUID(),
    operationId: randomUUID(),
    status: 'live',
    target: { kind: 'static', root },
    createdAt: new Date(),
  });
  project.liveDeploymentId = d.id;
  const em = kernel.orm.em.fork();
  await em.insert(Deployment, d);
  await em.insert(Project, project);
  return project.id;
}

const get = (host: string, path: string, headers: Record<string, string> = {}) =>
  new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, headers: { host, ...headers } }, (res) => {
        let body = '';
        res
          .on('data', (c) => (body += c))
          .on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      })
      .on('error', reject);
  });

const served = async () =>
  (await metricsOf(kernel).registry.getSingleMetric('hoist_http_requests_total')!.get()).values
    .filter((v) => v.labels.role === 'edge' && v.labels.status === '200')
    .reduce((n, v) => n + v.value, 0);

let privateId: string;
test.before(async () => {
  kernel = await testKernel({ edgeAccessLogEvery: 2 });
  // Sampled access log lines, as the edge's logger writes them.
  const child = kernel.log.child.bind(kernel.log);
  kernel.log.child = ((bindings: object) => {
    const c = child(bindings);
    const base = c.info.bind(c);
    c.info = ((obj: unknown, msg?: string) => {
      if (msg === 'edge request') lines.push(JSON.stringify(obj));
      return base(obj as object, msg as string);
    }) as typeof c.info;
    return c;
  }) as unknown as typeof kernel.log.child;
  await site('open', 'public', { 'index.html': '<h1>open</h1>', 'docs/index.html': 'docs' });
  privateId = await site('closed', 'private', { 'index.html': '<h1>closed</h1>' }, 'argon-hash');
  edge = await buildEdge(kernel);
  await edge.listen({ port: 0, host: '127.0.0.1' });
  port = (edge.server.address() as AddressInfo).port;
});
test.after(async () => {
  await edge?.close();
  await kernel?.stop();
});

/** GET `path` of `host` on `agent`'s one kept-alive connection: status and the client's local port. */
const onAgent = (agent: http.Agent, host: string, path: string, headers: Record<string, string>) =>
  new Promise<{ status: number; port: number }>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent, headers: { host, ...headers } }, (res) => {
        const local = res.socket.localPort!;
        res.resume().on('end', () => resolve({ status: res.statusCode!, port: local }));
      })
      .on('error', reject);
  });

test('a kept-alive connection checks its cookie once, and again when the password or the cookie changes', async () => {
  const [proof] = [...accessProofs('argon-hash', [])];
  const { token } = await kernel.get(TOKEN_SERVICE).sign('site', privateId, proof, 600);
  const { token: other } = await kernel.get(TOKEN_SERVICE).sign('site', randomUUID(), proof, 600);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const routes = kernel.get(HOST_ROUTES) as RoutingTable;
  try {
    const cookie = { cookie: `hoist_access=${token}` };
    const first = await onAgent(agent, 'closed.localhost', '/', cookie);
    assert.is(first.status, 200);
    assert.is((await onAgent(agent, 'closed.localhost', '/', cookie)).status, 200);
    // Another cookie on the same connection is checked: one of another project does not open it.
    const wrong = await onAgent(agent, 'closed.localhost', '/', { cookie: `hoist_access=${other}` });
    assert.is(wrong.status, 401);
    assert.is((await onAgent(agent, 'closed.localhost', '/', {})).status, 401, 'no cookie, no entry');
    assert.is((await onAgent(agent, 'closed.localhost', '/', cookie)).status, 200);
    // A new password: the same connection, the same cookie, refused at the next request.
    await kernel.orm.em.fork().nativeUpdate(Project, { id: privateId }, { accessPasswordHash: 'another-hash' });
    await routes.reload(privateId);
    const after = await onAgent(agent, 'closed.localhost', '/', cookie);
    assert.is(after.port, first.port, 'one connection throughout');
    assert.is(after.status, 401);
    await kernel.orm.em.fork().nativeUpdate(Project, { id: privateId }, { accessPasswordHash: 'argon-hash' });
    await routes.reload(privateId);
    assert.is((await onAgent(agent, 'closed.localhost', '/', cookie)).status, 200);
  } finally {
    agent.destroy();
  }
});

test('public static files, and private ones with a known cookie, are served with the database closed', async () => {
  const [proof] = [...accessProofs('argon-hash', [])];
  const { token } = await kernel.get(TOKEN_SERVICE).sign('site', privateId, proof, 600);
  const { token: other } = await kernel.get(TOKEN_SERVICE).sign('site', randomUUID(), proof, 600);
  const cookie = { cookie: `hoist_access=${token}` };
  // First sight of the cookie: verified once (through fastify), then known.
  assert.is((await get('closed.localhost', '/', cookie)).body, '<h1>closed</h1>');
  assert.is((await get('closed.localhost', '/', { cookie: `hoist_access=${other}` })).status, 401);
  const before = await served();
  // Nothing of what follows may read the database.
  await kernel.orm.close(true);
  const open = await get('open.localhost', '/');
  assert.is(open.status, 200);
  assert.is(open.body, '<h1>open</h1>');
  assert.match(String(open.headers['x-hoist-release']), /^[0-9a-f-]{36}$/);
  assert.is(open.headers['x-robots-tag'], undefined, 'public: indexable');
  const redirect = await get('open.localhost', '/docs?x=1');
  assert.is(redirect.status, 301);
  assert.is(redirect.headers.location, '/docs/?x=1');
  assert.is((await get('open.localhost', '/nope')).status, 404);
  const closed = await get('closed.localhost', '/', cookie);
  assert.is(closed.status, 200);
  assert.is(closed.body, '<h1>closed</h1>');
  assert.is(closed.headers['x-robots-tag'], 'noindex');
  assert.is((await get('nobody.localhost', '/')).status, 404);
  assert.is(await served(), before + 2, 'the fast path counts what it serves');
  assert.ok(lines.length >= 2, `one request in two is logged: ${lines.length}`);
  assert.match(lines[0], /"status":\d{3}/);
});

test.run();
