// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Domain } from '../../core/entities/domain.js';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js';
import { ACCESS_COOKIE } from '../../adapters/edge/access-gate.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';
import { edgeRequest, setCookie } from '../helpers/site-gate.js';

const PASSWORD = 'members password, please';

let h: LiveHoist;
let dns: TestDnsServer;
let token: string;
let projectId: string;
let projectHost: string;

test.before(async () => {
  dns = await startDnsServer();
  // Checks every second, so the worker's scheduler (not a verify call) moves the domain.
  h = await liveHoist({
    dnsServers: dns.address,
    dnsTimeoutMs: 2000,
    dnsTries: 1,
    domainSchedulerSeconds: 1,
    domainCheckSeconds: 1,
    domainCheckMaxSeconds: 2,
    domainActiveCheckSeconds: 1,
  });
  ({ token } = await h.login('pro'));
  const res = await h.upload(token, '/api/v1/local-to-live', await zipOf({ 'index.html': '<h1>customer shop</h1>' }), {
    name: 'Customer Shop',
  });
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
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** Polls the domain until `until` holds (the worker's checks move it); returns its view. */
async function waitForDomain(id: string, until: (d: any) => boolean, what: string, project = projectId) {
  const end = Date.now() + 60_000;
  for (;;) {
    const { body } = await call('GET', `/projects/${project}/domains/${id}`);
    if (until(body)) return body;
    if (Date.now() > end) throw new Error(`domain never became ${what}: ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const served = async (host: string) => {
  const res = await h.site(host);
  return res.status === 200 && res.body.includes('customer shop');
};

/**
 * The edge's answer for `host` once it is `status`, or its last after 5 s. A change the worker's checks
 * make reaches the edge's routing table just after it commits, so a poll of the domain may see it
 * first; changes made through the API reach the edge before the API answers, and are checked at once.
 */
async function edgeAnswers(host: string, status: number) {
  const end = performance.now() + 5000;
  for (;;) {
    const res = await h.site(host);
    if (res.status === status || performance.now() > end) return res;
    await new Promise((r) => setTimeout(r, 20));
  }
}

test(
  'a customer subdomain goes pending → active → misconfigured → active as its ' +
    'records change, and the edge follows',
  async () => {
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
    const site = await edgeAnswers('app.customer.test', 200);
    assert.is(site.status, 200);
    assert.ok(site.body.includes('customer shop'));
    assert.is(site.headers['x-hoist-release'], own.headers['x-hoist-release'], 'the same release as the project host');
    assert.ok(await served('APP.Customer.Test.:8443'), 'case, a trailing dot and a port do not matter');

    dns.set(txt.name, 'TXT', []);
    const gone = await waitForDomain(d.id, (x) => x.status === 'misconfigured', 'misconfigured');
    assert.match(gone.message, /No TXT record/);
    assert.is(
      (await edgeAnswers('app.customer.test', 404)).status,
      404,
      'the edge stops serving a misconfigured domain',
    );
    assert.ok(await served(projectHost), 'the project host is unaffected');

    dns.set(txt.name, 'TXT', [txt.value]);
    await waitForDomain(d.id, (x) => x.status === 'active', 'active again');
    await edgeAnswers('app.customer.test', 200);
    assert.ok(await served('app.customer.test'));

    dns.set(cname.name, 'CNAME', ['somewhere-else.example.test']);
    await waitForDomain(d.id, (x) => x.status === 'misconfigured', 'misconfigured by its CNAME');
    assert.is((await edgeAnswers('app.customer.test', 404)).status, 404);

    dns.set(cname.name, 'CNAME', [cname.value]);
    const verified = await call('POST', `/projects/${projectId}/domains/${d.id}/verify`);
    assert.is(verified.body.status, 'active', 'verify checks at once');
    assert.ok(await served('app.customer.test'));

    assert.is((await call('DELETE', `/projects/${projectId}/domains/${d.id}`)).status, 204);
    assert.is((await h.site('app.customer.test')).status, 404, 'a removed domain is not served, at once');
  },
);

test('a host that is neither a project host nor an active customer domain finds nothing', async () => {
  assert.is((await h.site('unknown.customer.test', '/index.html')).status, 404);
});

test(
  'a private project behind a customer subdomain is gated there too: sign-in page, ' +
    'password, a cookie for that host',
  async () => {
    const res = await h.upload(token, '/api/v1/local-to-live', await zipOf({ 'index.html': '<h1>members only</h1>' }), {
      name: 'Members',
      visibility: 'private',
      access_password: PASSWORD,
    });
    const body = await res.json();
    assert.is(res.status, 202, JSON.stringify(body));
    assert.is((await h.waitFor(token, body.operation.id, undefined, 120_000)).status, 'succeeded');
    const added = await call('POST', `/projects/${body.project.id}/domains`, { hostname: 'members.customer.test' });
    assert.is(added.status, 201, JSON.stringify(added.body));
    for (const r of added.body.records) dns.set(r.name, r.type, [r.value]);
    await waitForDomain(added.body.id, (x) => x.status === 'active', 'active', body.project.id);

    const host = 'members.customer.test';
    // The worker's check made it active: the edge has it just after that commit, which the poll may see first.
    assert.is((await edgeAnswers(host, 401)).status, 401, 'the edge gates the active domain');
    for (const path of ['/', '/index.html', '/missing']) {
      const gate = await edgeRequest(h.edge, host, 'GET', path);
      assert.is(gate.status, 401, path);
      assert.match(gate.body, /action="\/\.hoist\/access\/password"/);
      assert.not.match(gate.body, /members only/);
    }
    assert.is(
      (await edgeRequest(h.edge, host, 'GET', '/', { headers: { authorization: `Bearer ${token}` } })).status,
      401,
      'the API token does not open it',
    );
    const post = (password: string) =>
      edgeRequest(h.edge, host, 'POST', '/.hoist/access/password', {
        form: { password, next: '/' },
        headers: { origin: `http://${host}` },
      });
    const wrong = await post('not the password');
    assert.is(wrong.status, 401);
    assert.is(setCookie(wrong.cookies, ACCESS_COOKIE), null);
    const right = await post(PASSWORD);
    assert.is(right.status, 303);
    const cookie = setCookie(right.cookies, ACCESS_COOKIE)!;
    assert.not.ok(
      cookie.attributes.some((a) => a.toLowerCase().startsWith('domain')),
      'host-only',
    );
    const page = await edgeRequest(h.edge, host, 'GET', '/', {
      headers: { cookie: `${ACCESS_COOKIE}=${cookie.value}` },
    });
    assert.is(page.status, 200);
    assert.match(page.body, /members only/);
    assert.is(
      (await edgeRequest(h.edge, hostOf(body.project.url), 'GET', '/')).status,
      401,
      'the project host stays gated without a cookie',
    );
  },
);

test(
  "another account's earlier, never-verified claim does not block the owner: the " +
    'worker gives the name to the claim the DNS proves',
  async () => {
    const squatter = (await h.login('pro')).token;
    const asSquatter = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${h.api}/api/v1${path}`, {
        method,
        headers: {
          authorization: `Bearer ${squatter}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    };
    const theirs = await asSquatter('POST', '/projects', { name: 'squatted' });
    assert.is(theirs.status, 201, JSON.stringify(theirs.body));
    const claim = await asSquatter('POST', `/projects/${theirs.body.id}/domains`, { hostname: 'shop.customer.test' });
    assert.is(claim.status, 201, JSON.stringify(claim.body));
    const mine = await call('POST', `/projects/${projectId}/domains`, { hostname: 'shop.customer.test' });
    assert.is(mine.status, 201, 'a pending claim of another account does not block: ' + JSON.stringify(mine.body));
    for (const r of mine.body.records) dns.set(r.name, r.type, [r.value]);
    await waitForDomain(mine.body.id, (x) => x.status === 'active', 'active');
    await edgeAnswers('shop.customer.test', 200);
    assert.ok(await served('shop.customer.test'));
    const lost = await asSquatter('GET', `/projects/${theirs.body.id}/domains/${claim.body.id}`);
    assert.is(lost.body.status, 'failed');
    assert.match(lost.body.message, /was verified by another project first/);
    assert.is((await call('DELETE', `/projects/${projectId}/domains/${mine.body.id}`)).status, 204);
    dns.remove('shop.customer.test');
    dns.remove('_hoist-challenge.shop.customer.test');
  },
);

test('deleting the project removes its domains and the edge stops serving them', async () => {
  const added = await call('POST', `/projects/${projectId}/domains`, { hostname: 'www.customer.test' });
  for (const r of added.body.records) dns.set(r.name, r.type, [r.value]);
  await waitForDomain(added.body.id, (x) => x.status === 'active', 'active');
  await edgeAnswers('www.customer.test', 200);
  assert.ok(await served('www.customer.test'));
  const del = await call('DELETE', `/projects/${projectId}`);
  assert.ok(del.status < 300, JSON.stringify(del.body));
  assert.is((await h.site('www.customer.test')).status, 404, 'not served once the project is deleting');
  const em = h.running.kernel.orm.em;
  for (const end = Date.now() + 60_000; await em.fork().count(Domain, { projectId });) {
    if (Date.now() > end) throw new Error("the project's domains were never removed");
    await new Promise((r) => setTimeout(r, 100));
  }
});

test.run();
