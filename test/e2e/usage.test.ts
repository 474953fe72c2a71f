// legs: db
// Project usage: the edge counts each project's answers (by status class) and bytes, adds them to the stored hours
// every edgeUsageFlushSeconds, and the API shows them by day or hour; hosts that name no project count for nothing;
// bad queries are refused; old hours are purged and a deleted project's go with it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ProjectUsage } from '../../core/entities/project-usage.js';
import { hourOf, USAGE_DAYS, USAGE_SERVICE } from '../../core/usage/usage-service.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';
import { accountWithPassword, remoteCli } from '../helpers/remote-cli.js';

let h: LiveHoist;
let token: string;
test.before(async () => {
  h = await liveHoist({ edgeUsageFlushSeconds: 1 });
  ({ token } = await h.login('pro'));
});
test.after(async () => h?.close());

const em = () => h.running.kernel.orm.em.fork();
const usageOf = (projectId: string, query = '', t = token) =>
  h.call(t, 'GET', `/api/v1/projects/${projectId}/usage${query}`);

async function deployed(name: string) {
  const res = await h.upload(token, '/api/v1/local-to-live', await zipOf({ 'index.html': `<h1>${name}</h1>` }), {
    name,
  });
  const body = await res.json();
  assert.is((await h.waitFor(token, body.operation.id)).status, 'succeeded');
  return { id: body.project.id as string, host: hostOf(body.project.url) };
}

/** The project's usage once its total reaches `requests` (edges flush every second here). */
async function settled(projectId: string, requests: number) {
  const end = Date.now() + 20_000;
  for (;;) {
    const res = await usageOf(projectId);
    assert.is(res.status, 200, JSON.stringify(res.body));
    if (res.body.totals.requests >= requests || Date.now() > end) return res.body;
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('each answer counts for its project, by status class, with its bytes', async () => {
  const site = await deployed('usage-site');
  const quiet = await deployed('usage-quiet');
  let bodies = 0;
  for (let i = 0; i < 5; i++) {
    const ok = await h.site(site.host);
    assert.is(ok.status, 200);
    bodies += ok.body.length;
  }
  const etag = (await h.site(site.host)).headers.etag!;
  for (let i = 0; i < 2; i++) assert.is((await h.site(site.host, '/', { 'if-none-match': etag })).status, 304);
  for (let i = 0; i < 3; i++) assert.is((await h.site(site.host, '/missing')).status, 404);
  // A host that names no project counts for nothing.
  assert.is((await h.site('nothing-here.localhost')).status, 404);

  const usage = await settled(site.id, 11);
  assert.equal(usage.totals.requests, 11, JSON.stringify(usage.totals));
  assert.equal(usage.totals.status, { '2xx': 6, '3xx': 2, '4xx': 3, '5xx': 0 });
  assert.ok(usage.totals.bytes > bodies + 11 * 100, `bytes with headers: ${usage.totals.bytes}`);
  assert.is(usage.granularity, 'day');
  assert.is(usage.buckets.length, 7);
  assert.equal(usage.buckets.at(-1).requests, 11);
  assert.ok(usage.buckets.slice(0, -1).every((b: { requests: number }) => b.requests === 0));
  assert.is(usage.buckets[0].start, usage.from);
  assert.match(usage.from, /T00:00:00\.000Z$/);

  const hourly = (await usageOf(site.id, '?granularity=hour&days=1')).body;
  assert.is(hourly.buckets.length, 24);
  assert.is(hourly.buckets.at(-1).requests, 11);
  assert.is((await usageOf(quiet.id, '?days=3')).body.totals.requests, 0);
  assert.is((await usageOf(quiet.id, '?days=3')).body.buckets.length, 3);
});

test('two flushes add up; hours older than the retention are purged', async () => {
  const site = await deployed('usage-sums');
  const usage = h.running.kernel.get(USAGE_SERVICE);
  const hour = hourOf(Date.now());
  const one = {
    projectId: site.id,
    hour,
    requests: 2,
    bytes: 300,
    status2xx: 1,
    status3xx: 0,
    status4xx: 1,
    status5xx: 0,
  };
  await usage.record([one]);
  await usage.record([{ ...one, requests: 1, bytes: 5_000_000_000, status2xx: 0, status4xx: 0, status5xx: 1 }]);
  await usage.record([{ ...one, hour: hour - USAGE_DAYS * 24 - 1 }]);
  const totals = (await usageOf(site.id, '?days=2')).body.totals;
  assert.equal(totals, { requests: 3, bytes: 5_000_000_300, status: { '2xx': 1, '3xx': 0, '4xx': 1, '5xx': 1 } });
  assert.is(await em().count(ProjectUsage, { projectId: site.id }), 2);
  // A flush that fails adds nothing, though its first 200 rows were written: the edge adds them again later.
  const many = Array.from({ length: 201 }, (_, i) => ({ ...one, hour: hour - 1 - i }));
  many[200] = { ...one, hour: null as never };
  const failed = await usage.record(many).then(
    () => null,
    (e: Error) => e,
  );
  assert.ok(failed, 'a row without its hour is refused');
  assert.is(await em().count(ProjectUsage, { projectId: site.id }), 2, 'nothing of that flush stays');
  assert.is(await usage.purge(), 1);
  assert.equal(
    (await em().find(ProjectUsage, { projectId: site.id })).map((r) => r.hour),
    [hour],
  );
});

test('bad queries are 400, another account 404, no token 401; a deleted project takes its usage along', async () => {
  const site = await deployed('usage-refusals');
  for (const query of [
    '?days=0',
    '?days=91',
    '?days=abc',
    '?days=2.5',
    '?granularity=minute',
    '?granularity=hour&days=8',
  ]) {
    const res = await usageOf(site.id, query);
    assert.is(res.status, 400, `${query}: ${JSON.stringify(res.body)}`);
    assert.is(res.body.error.code, 'invalid_request');
  }
  const other = (await h.login('pro')).token;
  assert.is((await usageOf(site.id, '', other)).status, 404);
  assert.is((await usageOf('not-a-uuid')).status, 404);
  const anonymous = await fetch(`${h.api}/api/v1/projects/${site.id}/usage`);
  assert.is(anonymous.status, 401);

  assert.is((await h.site(site.host)).status, 200);
  await settled(site.id, 1);
  assert.ok(await em().count(ProjectUsage, { projectId: site.id }));
  const del = await h.call(token, 'DELETE', `/api/v1/projects/${site.id}/`);
  assert.is(del.status, 202, JSON.stringify(del.body));
  assert.is((await h.waitFor(token, del.body.operation.id)).status, 'succeeded');
  assert.is(await em().count(ProjectUsage, { projectId: site.id }), 0);
});

test('hoist usage prints the days and the total, or the JSON; bad usage exits 2 before any request', async () => {
  const cli = remoteCli(h);
  const user = await accountWithPassword(h);
  assert.is((await cli.run(['login'], `${user.email}\n${user.password}\n`)).code, 0);
  const res = await h.upload(
    (await h.call('', 'POST', '/api/v1/auth/login', { email: user.email, password: user.password })).body.token,
    '/api/v1/local-to-live',
    await zipOf({ 'index.html': '<h1>cli usage</h1>' }),
    { name: 'usage-cli' },
  );
  assert.is(res.status, 202);
  const table = await cli.run(['usage', '--project', 'usage-cli', '--days', '2']);
  assert.is(table.code, 0, table.stderr);
  assert.match(table.stdout, /DAY \(UTC\)\s+REQUESTS\s+2XX/, table.stdout);
  assert.match(table.stdout, /total\s+\d+/);
  const json = await cli.run(['usage', '--project', 'usage-cli', '--hourly', '--days', '1', '--json']);
  assert.is(json.code, 0, json.stderr);
  assert.equal([JSON.parse(json.stdout).granularity, JSON.parse(json.stdout).buckets.length], ['hour', 24]);
  for (const args of [
    ['--days', '0'],
    ['--days', 'x'],
    ['--hourly', '--days', '8'],
  ]) {
    const r = await cli.run(['usage', '--project', 'usage-cli', ...args], undefined, {
      HOIST_TOKEN: 'x',
      HOIST_API_URL: 'http://127.0.0.1:9',
    });
    assert.is(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
  }
});

test.run();
