// legs: db
import type { AbstractSqlConnection } from '@mikro-orm/knex';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DOMAIN_CHECKER, DomainChecker } from '../../../core/domains/domain-checker.js';
import { systemClock } from '../../../core/ports/clock.js';
import { DNS_RESOLVER, DnsLookupError, type DnsResolver } from '../../../core/ports/dns-resolver.js';
import { Domain } from '../../../core/entities/domain.js';
import { Project } from '../../../core/entities/project.js';
import { PROJECT_DELETER, type ProjectDeleter } from '../../../core/projects/project-deleter.js';
import { testApi, type TestAccount, type TestApi } from '../../helpers/api.js';
import { startDnsServer, type TestDnsServer } from '../../helpers/dns-server.js';

let t: TestApi;
let dns: TestDnsServer;
let pro: TestAccount;
let rival: TestAccount;
let projectId: string;
let slug: string;

test.before(async () => {
  dns = await startDnsServer();
  t = await testApi({
    appsDomain: 'apps.hoist.test',
    publicUrl: 'https://api.hoist.test',
    dnsServers: dns.address,
    dnsTimeoutMs: 2000,
    dnsTries: 1,
  });
  pro = await t.account({ plan: 'pro' });
  rival = await t.account({ plan: 'pro' });
  ({ projectId, slug } = await newProject(pro, 'shop'));
});
test.after(async () => {
  await t?.close();
  await dns?.close();
});

async function call(who: TestAccount | null, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) {
  const res = await t.app.inject({
    method,
    url: `/api/v1${url}`,
    headers: who ? who.auth : {},
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  return { status: res.statusCode, body: res.body ? res.json() : null };
}

async function newProject(who: TestAccount, name: string) {
  const { body } = await call(who, 'POST', '/projects', { name });
  return { projectId: body.id as string, slug: body.slug as string };
}

const rows = () => t.kernel.orm.em.fork().find(Domain, {}, { orderBy: { hostname: 'asc' } });
const add = (who: TestAccount, project: string, hostname: unknown) =>
  call(who, 'POST', `/projects/${project}/domains`, { hostname });

/** Publishes both records of a domain as its view asks for them. */
function publish(view: any) {
  for (const r of view.records) dns.set(r.name, r.type, [r.value]);
}

test('add answers 201 pending with the TXT and CNAME records to create; list and read show it', async () => {
  const res = await add(pro, projectId, 'Docs.Customer.TEST.');
  assert.is(res.status, 201, JSON.stringify(res.body));
  const d = res.body;
  assert.is(d.hostname, 'docs.customer.test');
  assert.is(d.status, 'pending');
  assert.is(d.project_id, projectId);
  assert.match(d.records[0].value, /^hoist-[0-9a-f]{40}$/);
  assert.equal(
    d.records.map((r: any) => [r.type, r.name, r.value]),
    [
      ['TXT', '_hoist-challenge.docs.customer.test', d.records[0].value],
      ['CNAME', 'docs.customer.test', `${slug}.apps.hoist.test`],
    ],
  );
  assert.is(d.last_checked_at, null);
  assert.ok(Date.parse(d.next_check_at) > Date.parse(d.created_at), 'the first check is scheduled');
  assert.match(d.url, /^http:\/\/docs\.customer\.test/);

  const list = await call(pro, 'GET', `/projects/${projectId}/domains`);
  assert.is(list.status, 200);
  assert.equal(
    list.body.domains.map((x: any) => x.id),
    [d.id],
  );
  const read = await call(pro, 'GET', `/projects/${projectId}/domains/${d.id}`);
  assert.equal(read.body, d);
  const other = await add(pro, projectId, 'docs2.customer.test');
  assert.is.not(other.body.records[0].value, d.records[0].value, 'each domain gets its own token');
  assert.is((await call(pro, 'DELETE', `/projects/${projectId}/domains/${other.body.id}`)).status, 204);
  assert.is((await call(pro, 'DELETE', `/projects/${projectId}/domains/${d.id}`)).status, 204);
});

test('verify drives pending → verified → active → misconfigured → active as the records change', async () => {
  const { body: d } = await add(pro, projectId, 'app.customer.test');
  const verify = async () => {
    const r = await call(pro, 'POST', `/projects/${projectId}/domains/${d.id}/verify`);
    assert.is(r.status, 200, JSON.stringify(r.body));
    return r.body;
  };
  let v = await verify();
  assert.is(v.status, 'pending');
  assert.match(v.message, /No TXT record at _hoist-challenge\.app\.customer\.test/);
  assert.match(v.message, /No CNAME record at app\.customer\.test/);
  assert.ok(v.last_checked_at);
  assert.is(v.verified_at, null);

  dns.set('_hoist-challenge.app.customer.test', 'TXT', ['someone-else']);
  v = await verify();
  assert.is(v.status, 'pending');
  assert.match(v.message, /holds "someone-else", not the token/);

  dns.set('_hoist-challenge.app.customer.test', 'TXT', ['someone-else', d.records[0].value]);
  v = await verify();
  assert.is(v.status, 'verified');
  assert.ok(v.verified_at);
  assert.match(v.message, /No CNAME record/);

  dns.set('app.customer.test', 'CNAME', ['elsewhere.example.test']);
  v = await verify();
  assert.is(v.status, 'verified');
  assert.match(v.message, /is a CNAME for elsewhere\.example\.test, not .*\.apps\.hoist\.test/);

  dns.set('app.customer.test', 'CNAME', [`${slug.toUpperCase()}.APPS.HOIST.TEST.`]);
  v = await verify();
  assert.is(v.status, 'active');
  assert.is(v.message, null);
  const activeCheck = Date.parse(v.next_check_at) - Date.parse(v.last_checked_at);
  assert.is(activeCheck, t.kernel.config.domainActiveCheckSeconds * 1000, 'an active domain is checked periodically');

  dns.set('_hoist-challenge.app.customer.test', 'TXT', []);
  v = await verify();
  assert.is(v.status, 'misconfigured');
  assert.match(v.message, /No TXT record/);

  publish(d);
  v = await verify();
  assert.is(v.status, 'active');

  dns.set('app.customer.test', 'CNAME', []);
  v = await verify();
  assert.is(v.status, 'misconfigured', 'an active domain whose CNAME goes is misconfigured, not merely verified');
  assert.match(v.message, /No CNAME record/);

  publish(d);
  assert.is((await verify()).status, 'active');
  assert.is((await call(pro, 'DELETE', `/projects/${projectId}/domains/${d.id}`)).status, 204);
  dns.remove('app.customer.test');
  dns.remove('_hoist-challenge.app.customer.test');
});

test('a failed lookup keeps the state, says so, and backs off', async () => {
  const { body: d } = await add(pro, projectId, 'flaky.customer.test');
  publish(d);
  const path = `/projects/${projectId}/domains/${d.id}/verify`;
  assert.is((await call(pro, 'POST', path)).body.status, 'active');
  dns.mode = 'servfail';
  try {
    const first = (await call(pro, 'POST', path)).body;
    assert.is(first.status, 'active', 'a server failure is not proof the records are gone');
    assert.match(first.message, /DNS lookup failed \(servfail\)/);
    const second = (await call(pro, 'POST', path)).body;
    const gap = (v: any) => Date.parse(v.next_check_at) - Date.parse(v.last_checked_at);
    assert.ok(gap(second) > gap(first), `the wait grows: ${gap(first)} then ${gap(second)}`);
  } finally {
    dns.mode = 'answer';
  }
  const back = (await call(pro, 'POST', path)).body;
  assert.is(back.status, 'active');
  assert.is(back.message, null);
  await call(pro, 'DELETE', `/projects/${projectId}/domains/${d.id}`);
});

test('pending domains are checked often at first, then less and less often', async () => {
  const { body: d } = await add(pro, projectId, 'slow.customer.test');
  const { domainCheckSeconds, domainCheckMaxSeconds } = t.kernel.config;
  assert.is(Date.parse(d.next_check_at) - Date.parse(d.created_at), domainCheckSeconds * 1000);
  const gaps: number[] = [];
  for (let i = 0; i < 14; i++) {
    const v = (await call(pro, 'POST', `/projects/${projectId}/domains/${d.id}/verify`)).body;
    gaps.push((Date.parse(v.next_check_at) - Date.parse(v.last_checked_at)) / 1000);
  }
  for (let i = 1; i < gaps.length; i++) assert.ok(gaps[i] >= gaps[i - 1], `never sooner: ${gaps}`);
  assert.ok(gaps[1] > gaps[0], `backs off: ${gaps}`);
  assert.is(gaps[gaps.length - 1], domainCheckMaxSeconds, `capped: ${gaps}`);
  await call(pro, 'DELETE', `/projects/${projectId}/domains/${d.id}`);
});

test(
  'every hostname that is not a customer subdomain is refused with 400 and the ' + 'reason; nothing is stored',
  async () => {
    const before = await rows();
    const cases: [unknown, RegExp][] = [
      ['customer.test', /apex domain/],
      ['customer.co.uk', /apex domain/],
      ['CUSTOMER.COM.', /apex domain/],
      ['co.uk', /public suffix/],
      ['com', /public suffix/],
      ['192.0.2.10', /IP address/],
      ['[2001:db8::1]', /IP address/],
      ['2001:db8::1', /IP address|not a valid DNS name/],
      ['apps.hoist.test', /belongs to this service/],
      ['shop.apps.hoist.test', /belongs to this service/],
      ['a.b.apps.hoist.test', /belongs to this service/],
      ['api.hoist.test', /belongs to this service/],
      ['*.customer.test', /wildcard/],
      ['*', /wildcard/],
      ['app..customer.test', /not a valid DNS name/],
      ['-app.customer.test', /not a valid DNS name/],
      ['app-.customer.test', /not a valid DNS name/],
      ['app_1.customer.test', /not a valid DNS name/],
      ['app customer.test', /not a valid DNS name/],
      ['https://app.customer.test/', /not a valid DNS name/],
      ['app.customer.test:8080', /not a valid DNS name/],
      [`${'a'.repeat(64)}.customer.test`, /not a valid DNS name/],
      [`${'abcdefghi.'.repeat(24)}customer.test`, /at most \d+ characters/],
      ['', /required/],
      ['   ', /required/],
    ];
    for (const [hostname, reason] of cases) {
      const res = await add(pro, projectId, hostname);
      assert.is(res.status, 400, `${hostname}: ${JSON.stringify(res.body)}`);
      assert.is(res.body.error.code, 'invalid_request');
      assert.is(res.body.error.details.field, 'hostname');
      assert.match(res.body.error.message, reason, String(hostname));
    }
    for (const payload of [{}, { hostname: 42 }, { hostname: null }, { hostname: 'ok.customer.test', extra: 1 }]) {
      const res = await call(pro, 'POST', `/projects/${projectId}/domains`, payload);
      assert.is(res.status, 400, JSON.stringify(payload));
      assert.is(res.body.error.code, 'invalid_request');
    }
    assert.equal(await rows(), before);
  },
);

test(
  'a pending claim blocks no one: another account and another project add the ' +
    'hostname too; only this project again is a 409',
  async () => {
    const { body: first } = await add(pro, projectId, 'held.customer.test');
    const theirs = await newProject(rival, 'rival-site');
    const rivalClaim = await add(rival, theirs.projectId, 'HELD.customer.test.');
    assert.is(rivalClaim.status, 201, JSON.stringify(rivalClaim.body));
    assert.is(rivalClaim.body.status, 'pending');
    assert.is.not(
      rivalClaim.body.records[0].value,
      first.records[0].value,
      'each claim proves control with its own token',
    );
    const mine = await newProject(pro, 'second-site');
    const sameAccount = await add(pro, mine.projectId, 'held.customer.test');
    assert.is(sameAccount.status, 201);
    const before = await rows();
    const again = await add(pro, projectId, 'held.customer.test');
    assert.is(again.status, 409);
    assert.is(again.body.error.code, 'conflict');
    assert.is(again.body.error.details.domain_id, first.id);
    assert.equal(await rows(), before, 'the refused add stores nothing');
    for (const [who, project, id] of [
      [pro, projectId, first.id],
      [rival, theirs.projectId, rivalClaim.body.id],
      [pro, mine.projectId, sameAccount.body.id],
    ] as const) {
      assert.is((await call(who, 'DELETE', `/projects/${project}/domains/${id}`)).status, 204);
    }
  },
);

test(
  'the first claim whose TXT record holds its token gets the hostname; the other ' +
    'claims fail with the reason; the DNS owner can take it over',
  async () => {
    const squatter = await t.account({ plan: 'pro' });
    const owner = await t.account({ plan: 'pro' });
    const s = await newProject(squatter, 'squat');
    const o = await newProject(owner, 'owned');
    const host = 'race.customer.test';
    const early = (await add(squatter, s.projectId, host)).body;
    const late = (await add(owner, o.projectId, host)).body;
    const verify = async (who: TestAccount, project: string, id: string) => {
      const r = await call(who, 'POST', `/projects/${project}/domains/${id}/verify`);
      assert.is(r.status, 200, JSON.stringify(r.body));
      return r.body;
    };
    // The project the edge serves on the hostname: the one whose claim of it is active.
    const servedSlug = async () => {
      const em = t.kernel.orm.em.fork();
      const active = await em.findOne(Domain, { hostname: host, status: 'active' });
      return active ? (await em.findOneOrFail(Project, { id: active.projectId })).slug : null;
    };

    // The owner of the DNS publishes their records: their later claim wins, the squatter's fails.
    publish(late);
    assert.is((await verify(owner, o.projectId, late.id)).status, 'active');
    assert.is(await servedSlug(), o.slug);
    const lost = (await call(squatter, 'GET', `/projects/${s.projectId}/domains/${early.id}`)).body;
    assert.is(lost.status, 'failed');
    assert.match(lost.message, /was verified by another project first/);
    const rechecked = await verify(squatter, s.projectId, early.id);
    assert.is(rechecked.status, 'failed', 'verifying again without the token changes nothing');
    assert.match(rechecked.message, /lost race\.customer\.test to another project/);
    assert.is(await servedSlug(), o.slug);
    // A failed domain is not checked on its own.
    await t.kernel.orm.em.fork().nativeUpdate(Domain, { id: early.id }, { nextCheckAt: new Date(Date.now() - 1000) });
    await t.kernel.get<DomainChecker>(DOMAIN_CHECKER).checkDue();
    assert.is(
      (await t.kernel.orm.em.fork().findOneOrFail(Domain, { id: early.id })).lastCheckedAt?.toISOString(),
      rechecked.last_checked_at,
    );
    // Adding the name again elsewhere works, and says the name is in use.
    const third = await newProject(squatter, 'squat-two');
    const again = await add(squatter, third.projectId, host);
    assert.is(again.status, 201);
    assert.match(again.body.message, /is in use by another project/);

    // Both tokens in the record: the holder keeps the name.
    dns.set(`_hoist-challenge.${host}`, 'TXT', [late.records[0].value, early.records[0].value]);
    const held = await verify(squatter, s.projectId, early.id);
    assert.is(held.status, 'failed');
    assert.match(held.message, /held by another project whose token is in the TXT record/);
    assert.is(await servedSlug(), o.slug);

    // The record now holds the squatter's token alone (the name changed hands): it takes the name over.
    dns.set(`_hoist-challenge.${host}`, 'TXT', [early.records[0].value]);
    dns.set(host, 'CNAME', [early.records[1].value]);
    assert.is((await verify(squatter, s.projectId, early.id)).status, 'active');
    assert.is(await servedSlug(), s.slug);
    const displaced = (await call(owner, 'GET', `/projects/${o.projectId}/domains/${late.id}`)).body;
    assert.is(displaced.status, 'failed');
    assert.match(displaced.message, /Another project proved control of race\.customer\.test/);
    const holders = await t.kernel.orm.em.fork().find(Domain, { hostname: host, ownedHostname: host });
    assert.equal(
      holders.map((d) => d.id),
      [early.id],
      'one holder at a time',
    );
    dns.remove(host);
    dns.remove(`_hoist-challenge.${host}`);
  },
);

test('two claims proving control at the same moment: exactly one gets the hostname', async () => {
  const a = await t.account({ plan: 'pro' });
  const b = await t.account({ plan: 'pro' });
  const pa = await newProject(a, 'tie-a');
  const pb = await newProject(b, 'tie-b');
  const host = 'tie.customer.test';
  const da = (await add(a, pa.projectId, host)).body;
  const db = (await add(b, pb.projectId, host)).body;
  dns.set(`_hoist-challenge.${host}`, 'TXT', [da.records[0].value, db.records[0].value]);
  const [va, vb] = await Promise.all([
    call(a, 'POST', `/projects/${pa.projectId}/domains/${da.id}/verify`),
    call(b, 'POST', `/projects/${pb.projectId}/domains/${db.id}/verify`),
  ]);
  const states = [va.body.status, vb.body.status].sort();
  assert.equal(states, ['failed', 'verified'], JSON.stringify([va.body, vb.body]));
  assert.is(await t.kernel.orm.em.fork().count(Domain, { ownedHostname: host }), 1);
  dns.remove(`_hoist-challenge.${host}`);
});

test(
  'a check that read no holder but finds the name taken when it writes fails with ' +
    'the reason; the holder keeps the name',
  async () => {
    const a = await t.account({ plan: 'pro' });
    const b = await t.account({ plan: 'pro' });
    const pa = await newProject(a, 'first-writer');
    const pb = await newProject(b, 'late-writer');
    const host = 'stale.customer.test';
    const da = (await add(a, pa.projectId, host)).body;
    const db = (await add(b, pb.projectId, host)).body;
    dns.set(`_hoist-challenge.${host}`, 'TXT', [db.records[0].value]);
    dns.set(host, 'CNAME', [db.records[1].value]);
    // b's checker reads before a's write lands: it sees no holder, as a concurrent check would.
    const blind = <T extends object>(em: T): T =>
      new Proxy(em, {
        get(target, prop) {
          if (prop === 'fork') return () => blind((target as any).fork());
          if (prop === 'findOne')
            return (entity: unknown, where: any, opts: unknown) =>
              where && 'ownedHostname' in where ? Promise.resolve(null) : (target as any).findOne(entity, where, opts);
          const v = Reflect.get(target, prop);
          return typeof v === 'function' ? v.bind(target) : v;
        },
      });
    const em = t.kernel.orm.em.fork();
    await em.nativeUpdate(
      Domain,
      { id: da.id },
      { status: 'active', ownedHostname: host, verifiedAt: new Date(), activatedAt: new Date() },
    );
    const checker = new DomainChecker(
      blind(t.kernel.orm.em),
      t.kernel.get<DnsResolver>(DNS_RESOLVER),
      systemClock,
      t.kernel.config,
    );
    const lost = await checker.check(db.id);
    assert.is(lost?.status, 'failed');
    assert.match(lost!.message!, /was verified by another project first/);
    const [ra, rb] = await Promise.all([
      em.fork().findOneOrFail(Domain, { id: da.id }),
      em.fork().findOneOrFail(Domain, { id: db.id }),
    ]);
    assert.equal([ra.status, ra.ownedHostname], ['active', host]);
    assert.equal([rb.status, rb.ownedHostname, rb.verifiedAt, rb.activatedAt], ['failed', null, null, null]);
    dns.remove(host);
    dns.remove(`_hoist-challenge.${host}`);
  },
);

test(
  'scheduled checks remove claims still pending after domainPendingTtlSeconds; ' +
    'verify and younger claims keep theirs',
  async () => {
    const who = await t.account({ plan: 'pro' });
    const p = await newProject(who, 'ttl');
    const old = (await add(who, p.projectId, 'old.customer.test')).body;
    const young = (await add(who, p.projectId, 'young.customer.test')).body;
    const verifiedOld = (await add(who, p.projectId, 'kept.customer.test')).body;
    const em = t.kernel.orm.em.fork();
    const ttl = t.kernel.config.domainPendingTtlSeconds * 1000;
    await em.nativeUpdate(
      Domain,
      { id: { $in: [old.id, verifiedOld.id] } },
      { createdAt: new Date(Date.now() - ttl - 1000) },
    );
    // Verify checks now and never removes: an expired claim whose record is right is verified.
    dns.set('_hoist-challenge.kept.customer.test', 'TXT', [verifiedOld.records[0].value]);
    assert.is((await call(who, 'POST', `/projects/${p.projectId}/domains/${old.id}/verify`)).body.status, 'pending');
    assert.is(
      (await call(who, 'POST', `/projects/${p.projectId}/domains/${verifiedOld.id}/verify`)).body.status,
      'verified',
    );
    await em.nativeUpdate(
      Domain,
      { id: { $in: [old.id, young.id, verifiedOld.id] } },
      { nextCheckAt: new Date(Date.now() - 1000) },
    );
    await t.kernel.get<DomainChecker>(DOMAIN_CHECKER).checkDue();
    assert.equal(
      (await em.fork().find(Domain, { projectId: p.projectId }, { orderBy: { hostname: 'asc' } })).map((d) => [
        d.hostname,
        d.status,
      ]),
      [
        ['kept.customer.test', 'verified'],
        ['young.customer.test', 'pending'],
      ],
    );
    assert.is((await call(who, 'GET', `/projects/${p.projectId}/domains/${old.id}`)).status, 404);
    dns.remove('_hoist-challenge.kept.customer.test');
  },
);

test("concurrent adds never pass the account's limit: exactly 5 are created, the rest 403", async () => {
  const rush = await t.account({ plan: 'pro' });
  const { projectId: site } = await newProject(rush, 'rush-site');
  const answers = await Promise.all(Array.from({ length: 9 }, (_, i) => add(rush, site, `r${i}.rush.test`)));
  const statuses = answers.map((a) => a.status);
  assert.is(statuses.filter((s) => s === 201).length, 5, statuses.join(' '));
  assert.is(statuses.filter((s) => s === 403).length, 4, statuses.join(' '));
  assert.is((await rows()).filter((d) => d.accountId === rush.accountId).length, 5);
});

test(
  'a plan without customer subdomains answers 403 with the plan fields; the limit ' + 'counts the whole account',
  async () => {
    const free = await t.account({ plan: 'free' });
    const { projectId: freeProject } = await newProject(free, 'free-site');
    const before = await rows();
    const res = await add(free, freeProject, 'app.free-customer.test');
    assert.is(res.status, 403);
    assert.is(res.body.error.code, 'plan_restricted');
    assert.equal(
      {
        feature: res.body.error.feature,
        plan: res.body.error.plan,
        required_plan: res.body.error.required_plan,
        limit: res.body.error.limit,
        usage: res.body.error.usage,
      },
      { feature: 'customer_subdomains', plan: 'free', required_plan: 'pro', limit: 0, usage: 0 },
    );
    assert.equal(await rows(), before);

    const full = await t.account({ plan: 'pro' });
    const a = await newProject(full, 'full-a');
    const b = await newProject(full, 'full-b');
    for (let i = 0; i < 5; i++)
      assert.is((await add(full, i % 2 ? a.projectId : b.projectId, `s${i}.full.test`)).status, 201);
    const over = await add(full, a.projectId, 's5.full.test');
    assert.is(over.status, 403);
    assert.is(over.body.error.limit, 5);
    assert.is(over.body.error.usage, 5);
    assert.is(over.body.error.required_plan, 'team');
    const ent = await call(full, 'GET', '/billing/entitlements');
    assert.is(ent.body.usage.customer_subdomains, 5, 'the entitlements call counts them');
    assert.is(await t.kernel.orm.em.fork().count(Domain, { accountId: full.accountId }), 5);
  },
);

test("another account's project or domain is a 404; no token is a 401; nothing changes", async () => {
  const { body: d } = await add(pro, projectId, 'private.customer.test');
  const before = await rows();
  const urls = [`/projects/${projectId}/domains`, `/projects/${projectId}/domains/${d.id}`];
  assert.is((await call(rival, 'GET', urls[0])).status, 404);
  assert.is((await call(rival, 'GET', urls[1])).status, 404);
  assert.is((await call(rival, 'POST', `${urls[1]}/verify`)).status, 404);
  assert.is((await call(rival, 'DELETE', urls[1])).status, 404);
  const steal = await add(rival, projectId, 'other.customer.test');
  assert.is(steal.status, 404);
  assert.is(steal.body.error.code, 'not_found');
  // The right domain id under another of the caller's projects is not found either.
  const theirs = await newProject(rival, 'rival-two');
  assert.is((await call(rival, 'GET', `/projects/${theirs.projectId}/domains/${d.id}`)).status, 404);
  for (const bad of ['not-a-uuid', '00000000-0000-0000-0000-000000000000']) {
    assert.is((await call(pro, 'GET', `/projects/${projectId}/domains/${bad}`)).status, 404);
    assert.is((await call(pro, 'DELETE', `/projects/${projectId}/domains/${bad}`)).status, 404);
    assert.is((await call(pro, 'POST', `/projects/${projectId}/domains/${bad}/verify`)).status, 404);
  }
  for (const [method, url] of [
    ['GET', urls[0]],
    ['POST', urls[0]],
    ['GET', urls[1]],
    ['POST', `${urls[1]}/verify`],
    ['DELETE', urls[1]],
  ] as const) {
    const res = await call(null, method, url, method === 'POST' ? { hostname: 'x.customer.test' } : undefined);
    assert.is(res.status, 401, `${method} ${url}`);
    assert.is(res.body.error.code, 'unauthorized');
  }
  assert.equal(await rows(), before);
  await call(pro, 'DELETE', urls[1]);
});

test('two checkers never check one domain at once: the second finds it claimed', async () => {
  const { body: d } = await add(pro, projectId, 'claimed.customer.test');
  publish(d);
  const checker = t.kernel.get<DomainChecker>(DOMAIN_CHECKER);
  dns.mode = 'silent';
  const asked = dns.asked.length;
  const slow = checker.check(d.id);
  // Wait until the first checker's question reached the server: it holds the claim now.
  for (const end = Date.now() + 20_000; dns.asked.length === asked;) {
    if (Date.now() > end) throw new Error('the first check never asked');
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.is(await checker.check(d.id), null, 'the second checker does not check a claimed domain');
  dns.mode = 'answer';
  const first = await slow;
  assert.ok(first, 'the first checker writes its result');
  assert.match(first!.message ?? '', /timeout/);
  const row = await t.kernel.orm.em.fork().findOneOrFail(Domain, { id: d.id });
  assert.is(row.claimedBy, null, 'the claim is released');
  assert.ok(await checker.check(d.id), 'and the next check takes it');
  await call(pro, 'DELETE', `/projects/${projectId}/domains/${d.id}`);
});

test('verify calls of one domain at once share one check: its name servers are asked once, nothing polls', async () => {
  const { body: d } = await add(pro, projectId, 'hammered.customer.test');
  const path = `/projects/${projectId}/domains/${d.id}/verify`;
  let claims = 0;
  const count = (q: { sql: string }) => {
    if (/^update/i.test(q.sql) && q.sql.includes('claimed_until')) claims++;
  };
  const knex = (t.kernel.orm.em.getConnection() as AbstractSqlConnection).getKnex();
  knex.on('query', count);
  dns.mode = 'silent';
  const asked = dns.asked.length;
  try {
    const answers = await Promise.all(Array.from({ length: 20 }, () => call(pro, 'POST', path)));
    assert.equal([...new Set(answers.map((a) => a.status))], [200]);
    assert.ok(
      answers.every((a) => a.body.status === 'pending' && /DNS lookup failed \(timeout\)/.test(a.body.message)),
      JSON.stringify(answers[0].body),
    );
    const questions = dns.asked.slice(asked).filter((q) => q.endsWith('hammered.customer.test'));
    assert.equal(questions.sort(), ['CNAME hammered.customer.test', 'TXT _hoist-challenge.hammered.customer.test']);
    assert.ok(claims <= 2, `one claim and its release, not a poll of the database by every call: ${claims}`);
  } finally {
    knex.off('query', count);
    dns.mode = 'answer';
  }
  await call(pro, 'DELETE', `/projects/${projectId}/domains/${d.id}`);
});

test('checkDue checks only domains that are due, and reschedules them', async () => {
  const { body: d } = await add(pro, projectId, 'due.customer.test');
  const checker = t.kernel.get<DomainChecker>(DOMAIN_CHECKER);
  const em = t.kernel.orm.em.fork();
  await em.nativeUpdate(Domain, {}, { nextCheckAt: new Date(Date.now() + 3_600_000) });
  assert.is(await checker.checkDue(), 0);
  await em.nativeUpdate(Domain, { id: d.id }, { nextCheckAt: new Date(Date.now() - 1000) });
  publish(d);
  assert.is(await checker.checkDue(), 1);
  const row = await em.fork().findOneOrFail(Domain, { id: d.id });
  assert.is(row.status, 'active');
  assert.ok(row.nextCheckAt.getTime() > Date.now());
  assert.is(await checker.checkDue(), 0);
  await call(pro, 'DELETE', `/projects/${projectId}/domains/${d.id}`);
});

test("checkDue checks at once: one account's domains whose name servers never answer hold no other's", async () => {
  const who = await t.account({ plan: 'pro' });
  const p = await newProject(who, 'silent-ns');
  const slow = [];
  for (let i = 0; i < 4; i++) slow.push((await add(who, p.projectId, `d${i}.silent.test`)).body);
  const { body: mine } = await add(pro, projectId, 'prompt.customer.test');
  const em = t.kernel.orm.em.fork();
  await em.nativeUpdate(Domain, {}, { nextCheckAt: new Date(Date.now() + 3_600_000) });
  await em.nativeUpdate(Domain, { projectId: p.projectId }, { nextCheckAt: new Date(Date.now() - 2000) });
  await em.nativeUpdate(Domain, { id: mine.id }, { nextCheckAt: new Date(Date.now() - 1000) });
  // Names under silent.test wait out a second each, as a lookup that times out does; the others answer at once.
  const wait = async (name: string) => {
    if (!name.endsWith('silent.test')) return [];
    await new Promise((r) => setTimeout(r, 1000));
    throw new DnsLookupError(name, 'timeout');
  };
  const resolver: DnsResolver = { resolveTxt: wait, resolveCname: wait, resolve4: wait };
  const checker = new DomainChecker(t.kernel.orm.em, resolver, systemClock, t.kernel.config);
  const started = performance.now();
  assert.is(await checker.checkDue(), 5);
  const ms = performance.now() - started;
  assert.ok(ms < 2_500, `the checks ran at once, not one after another: ${Math.round(ms)} ms`);
  const rows = await em.fork().find(Domain, { id: { $in: [mine.id, ...slow.map((d) => d.id)] } });
  assert.ok(
    rows.every((r) => r.lastCheckedAt),
    'every due domain was checked',
  );
  for (const d of [...slow, mine])
    await call(d === mine ? pro : who, 'DELETE', `/projects/${d.project_id}/domains/${d.id}`);
});

test('deleting a project removes its domains and frees their hostnames', async () => {
  const doomed = await newProject(pro, 'doomed');
  const { body: d } = await add(pro, doomed.projectId, 'doomed.customer.test');
  const del = await call(pro, 'DELETE', `/projects/${doomed.projectId}`);
  assert.ok([200, 202, 204].includes(del.status), JSON.stringify(del.body));
  await t.inContext(() => t.kernel.get<ProjectDeleter>(PROJECT_DELETER).finishUnfinished());
  assert.is(await t.kernel.orm.em.fork().count(Domain, { id: d.id }), 0);
  assert.is((await add(rival, (await newProject(rival, 'heir')).projectId, 'doomed.customer.test')).status, 201);
});

test.run();
