// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Domain } from '../../core/entities/domain.js';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let dns: TestDnsServer;
let token: string;
let projectId: string;
let projectHost: string;

test.before(async () => {
  dns = await startDnsServer();
  // Checks every second, so the worker's scheduler (not a verify call) moves the domain.
  h = await liveHoist({ dnsServers: dns.address, dnsTimeoutMs: 2000, dnsTries: 1, domainSchedulerSeconds: 1, domainCheckSeconds: 1, domainCheckMaxSeconds: 2, domainActiveCheckSeconds: 1 });
  ({ token } = await h.login('pro'));
  const res = await h.upload(token, '/api/v1/local-to-live', await zipOf({ 'index.html': '<h1>customer shop</h1>' }), { name: 'Customer Shop' });
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  const op = await h.waitFor(token, body.operation.id, undefined, 120_000);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  projectHost = hostOf(body.project.url);
  const { body: projects } = await h.get(token, '/api/v1/projects');
  projectId = projects.projects[0].id;
});
test.after(async () => {
  await h?.close();
  await dns?.close();
});

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(`${h.api}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** Polls the domain until `until` holds (the worker's checks move it); returns its view. */
async function waitForDomain(id: string, until: (d: any) => boolean, what: string) {
  const end = Date.now() + 60_000;
  for (;;) {
    const { body } = await call('GET', `/projects/${projectId}/domains/${id}`);
    if (until(body)) return body;
    if (Date.now() > end) throw new Error(`domain never became ${what}: ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const served = async (host: string) => {
  const res = await h.site(host);
  return res.status === 200 && res.body.includes('customer shop');
};

test('a customer subdomain goes pending → active → misconfigured → active as its records change, and the edge follows', async () => {
  const own = await h.site(projectHost);
  assert.is(own.status, 200);
  const added = await call('POST', `/projects/${projectId}/domains`, { hostname: 'app.customer.test' });
  assert.is(added.status, 201, JSON.stringify(added.body));
  const d = added.body;
  const [txt, cname] = d.records;
  assert.is(cname.value, projectHost.replace(/:\d+$/, ''));

  const checked = await waitForDomain(d.id, (x) => x.last_checked_at !== null, 'checked');
  assert.is(checked.status, 'pending');
  assert.is((await h.site('app.customer.test')).status, 404, 'a pending domain is not served');

  dns.set(txt.name, 'TXT', [txt.value]);
  await waitForDomain(d.id, (x) => x.status === 'verified', 'verified');
  assert.is((await h.site('app.customer.test')).status, 404, 'a verified domain without its CNAME is not served');

  dns.set(cname.name, 'CNAME', [cname.value]);
  const active = await waitForDomain(d.id, (x) => x.status === 'active', 'active');
  assert.ok(active.verified_at);
  const site = await h.site('app.customer.test');
  assert.is(site.status, 200);
  assert.ok(site.body.includes('customer shop'));
  assert.is(site.headers['x-hoist-release'], own.headers['x-hoist-release'], 'the same release as the project host');
  assert.ok(await served('APP.Customer.Test.:8443'), 'case, a trailing dot and a port do not matter');

  dns.set(txt.name, 'TXT', []);
  const gone = await waitForDomain(d.id, (x) => x.status === 'misconfigured', 'misconfigured');
  assert.match(gone.message, /No TXT record/);
  assert.is((await h.site('app.customer.test')).status, 404, 'the edge stops serving a misconfigured domain');
  assert.ok(await served(projectHost), 'the project host is unaffected');

  dns.set(txt.name, 'TXT', [txt.value]);
  await waitForDomain(d.id, (x) => x.status === 'active', 'active again');
  assert.ok(await served('app.customer.test'));

  dns.set(cname.name, 'CNAME', ['somewhere-else.example.test']);
  await waitForDomain(d.id, (x) => x.status === 'misconfigured', 'misconfigured by its CNAME');
  assert.is((await h.site('app.customer.test')).status, 404);

  dns.set(cname.name, 'CNAME', [cname.value]);
  const verified = await call('POST', `/projects/${projectId}/domains/${d.id}/verify`);
  assert.is(verified.body.status, 'active', 'verify checks at once');
  assert.ok(await served('app.customer.test'));

  assert.is((await call('DELETE', `/projects/${projectId}/domains/${d.id}`)).status, 204);
  assert.is((await h.site('app.customer.test')).status, 404, 'a removed domain is not served, at once');
});

test('a host that is neither a project host nor an active customer domain finds nothing', async () => {
  assert.is((await h.site('unknown.customer.test', '/index.html')).status, 404);
});

test('deleting the project removes its domains and the edge stops serving them', async () => {
  const added = await call('POST', `/projects/${projectId}/domains`, { hostname: 'www.customer.test' });
  for (const r of added.body.records) dns.set(r.name, r.type, [r.value]);
  await waitForDomain(added.body.id, (x) => x.status === 'active', 'active');
  assert.ok(await served('www.customer.test'));
  const del = await call('DELETE', `/projects/${projectId}`);
  assert.ok(del.status < 300, JSON.stringify(del.body));
  assert.is((await h.site('www.customer.test')).status, 404, 'not served once the project is deleting');
  const em = h.running.kernel.orm.em;
  for (const end = Date.now() + 60_000; await em.fork().count(Domain, { projectId }); ) {
    if (Date.now() > end) throw new Error('the project\'s domains were never removed');
    await new Promise((r) => setTimeout(r, 100));
  }
});

test.run();
