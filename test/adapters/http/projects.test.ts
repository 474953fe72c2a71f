// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Operation } from '../../../core/entities/operation.js';
import { Project } from '../../../core/entities/project.js';
import { testApi, type TestAccount, type TestApi } from '../../helpers/api.js';

let t: TestApi;
test.before(async () => {
  t = await testApi({ appsScheme: 'https', appsDomain: 'apps.example.test', appsPort: 443 });
});
test.after(async () => t?.close());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const emptySettings = {
  root_directory: null,
  install_command: null,
  build_command: null,
  start_command: null,
  output_directory: null,
  node_version: null,
  framework: null,
  runtime: null,
};

const create = (a: TestAccount, payload: Record<string, unknown>) =>
  t.app.inject({ method: 'POST', url: '/api/v1/projects/', headers: a.auth, payload });
const read = (a: TestAccount, id: string) =>
  t.app.inject({ method: 'GET', url: `/api/v1/projects/${id}/`, headers: a.auth });
const patch = (a: TestAccount, id: string, payload: Record<string, unknown>) =>
  t.app.inject({ method: 'PATCH', url: `/api/v1/projects/${id}/`, headers: a.auth, payload });
const del = (a: TestAccount, id: string) =>
  t.app.inject({ method: 'DELETE', url: `/api/v1/projects/${id}/`, headers: a.auth });
const list = (a: TestAccount, query = '') =>
  t.app.inject({ method: 'GET', url: `/api/v1/projects/${query}`, headers: a.auth });
const rows = (where: Record<string, unknown> = {}) => t.kernel.orm.em.fork().count(Project, where);
const ops = (where: Record<string, unknown> = {}) => t.kernel.orm.em.fork().count(Operation, where);

async function created(a: TestAccount, payload: Record<string, unknown>) {
  const res = await create(a, payload);
  assert.is(res.statusCode, 201, res.body);
  return res.json();
}

async function settled(operationId: string): Promise<Operation> {
  for (let i = 0; i < 100; i++) {
    const op = await t.kernel.orm.em.fork().findOneOrFail(Operation, { id: operationId });
    if (op.status === 'succeeded') return op;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`operation ${operationId} did not finish`);
}

test('create answers 201 with the project: draft by default, slug from the name, URL on the apps domain', async () => {
  const a = await t.account();
  const res = await create(a, { name: '  Café Déjà Vu!  ' });
  assert.is(res.statusCode, 201);
  const p = res.json();
  assert.match(p.id, UUID);
  assert.is(p.name, 'Café Déjà Vu!');
  assert.is(p.slug, 'cafe-deja-vu');
  assert.is(p.url, 'https://cafe-deja-vu.apps.example.test/');
  assert.is(p.visibility, 'draft');
  assert.equal(p.settings, emptySettings);
  assert.ok(Date.parse(p.created_at) && Date.parse(p.updated_at));
  assert.equal((await read(a, p.id)).json(), p);
});

test('create takes build settings, under settings or at the top level', async () => {
  const a = await t.account();
  const p = await created(a, {
    name: 'Built',
    visibility: 'public',
    build_command: 'npm run build',
    settings: {
      root_directory: 'apps/web',
      runtime: 'static',
      framework: 'vite',
      node_version: '>=18 <23',
      output_directory: './dist',
    },
  });
  assert.is(p.visibility, 'public');
  assert.equal(p.settings, {
    ...emptySettings,
    root_directory: 'apps/web',
    build_command: 'npm run build',
    output_directory: './dist',
    node_version: '>=18 <23',
    framework: 'vite',
    runtime: 'static',
  });
  const twice = await create(a, { name: 'Twice', runtime: 'node', settings: { runtime: 'static' } });
  assert.is(twice.statusCode, 400);
  assert.is(twice.json().error.details.field, 'runtime');
});

test('a missing, blank or too long name is 400 invalid_request and writes nothing', async () => {
  const a = await t.account();
  const before = await rows();
  for (const payload of [{}, { visibility: 'public' }, { name: '' }, { name: '   ' }, { name: 'x'.repeat(101) }]) {
    const res = await create(a, payload);
    assert.is(res.statusCode, 400, JSON.stringify(payload));
    assert.is(res.json().error.code, 'invalid_request');
    assert.is(res.json().error.details.field, 'name');
  }
  assert.is(await rows(), before);
});

test('unknown fields, bad visibility and bad build settings are 400 naming the field, and write nothing', async () => {
  const a = await t.account();
  const before = await rows();
  const cases: [Record<string, unknown>, string][] = [
    [{ name: 'x', owner: 'someone' }, 'owner'],
    [{ name: 'x', settings: { shell: 'bash' } }, 'settings.shell'],
    [{ name: 'x', visibility: 'secret' }, 'visibility'],
    [{ name: 'x', root_directory: '../up' }, 'root_directory'],
    [{ name: 'x', root_directory: 'a/../../b' }, 'root_directory'],
    [{ name: 'x', root_directory: '/etc' }, 'root_directory'],
    [{ name: 'x', output_directory: 'C:\\out' }, 'output_directory'],
    [{ name: 'x', build_command: 'x'.repeat(1001) }, 'build_command'],
    [{ name: 'x', start_command: 'node a.js\nrm -rf /' }, 'start_command'],
    [{ name: 'x', install_command: '' }, 'install_command'],
    [{ name: 'x', node_version: 'banana' }, 'node_version'],
    [{ name: 'x', runtime: 'python' }, 'runtime'],
    [{ name: 'x', framework: 'rails' }, 'framework'],
  ];
  for (const [payload, field] of cases) {
    const res = await create(a, payload);
    assert.is(res.statusCode, 400, JSON.stringify(payload));
    assert.is(res.json().error.code, 'invalid_request');
    assert.is(res.json().error.details.field, field, JSON.stringify(payload));
  }
  assert.is(await rows(), before);
});

test(
  'private visibility on the free plan is 403 plan_restricted with the plan fields, ' + 'and writes nothing',
  async () => {
    const a = await t.account();
    const before = await rows();
    const res = await create(a, { name: 'Secret', visibility: 'private' });
    assert.is(res.statusCode, 403);
    const e = res.json().error;
    assert.is(e.code, 'plan_restricted');
    assert.is(e.feature, 'visibility:private');
    assert.is(e.plan, 'free');
    assert.is(e.required_plan, 'pro');
    assert.ok('limit' in e && 'usage' in e);
    assert.ok(e.message && e.request_id);
    assert.is(await rows(), before);

    const p = await created(a, { name: 'Open' });
    const up = await patch(a, p.id, { visibility: 'private', name: 'Renamed' });
    assert.is(up.statusCode, 403);
    assert.is(up.json().error.code, 'plan_restricted');
    assert.equal((await read(a, p.id)).json(), p);
  },
);

test("the free plan's projects limit is 403 with limit and usage, and writes nothing", async () => {
  const a = await t.account();
  for (let i = 0; i < 3; i++) await created(a, { name: `Limited ${i}` });
  const before = await rows();
  const res = await create(a, { name: 'One too many' });
  assert.is(res.statusCode, 403);
  const e = res.json().error;
  assert.equal(
    { code: e.code, feature: e.feature, plan: e.plan, required_plan: e.required_plan, limit: e.limit, usage: e.usage },
    { code: 'plan_restricted', feature: 'projects', plan: 'free', required_plan: 'pro', limit: 3, usage: 3 },
  );
  assert.is(await rows(), before);
});

test('concurrent creates never pass the plan: three projects on free, the rest 403', async () => {
  const a = await t.account();
  const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => create(a, { name: `Rush ${i}` })));
  const statuses = answers.map((r) => r.statusCode);
  assert.is(statuses.filter((s) => s === 201).length, 3, statuses.join(' '));
  assert.is(statuses.filter((s) => s === 403).length, 5, statuses.join(' '));
  assert.is(await rows({ accountId: a.accountId }), 3);
  const b = await t.account({ plan: 'pro' });
  const privates = await Promise.all(
    Array.from({ length: 14 }, (_, i) => create(b, { name: `Secret ${i}`, visibility: 'private' })),
  );
  assert.is(privates.filter((r) => r.statusCode === 201).length, 10);
  assert.is(await rows({ accountId: b.accountId, visibility: 'private' }), 10);
});

test('pro allows private projects up to its private_projects limit', async () => {
  const a = await t.account({ plan: 'pro' });
  for (let i = 0; i < 10; i++)
    assert.is((await created(a, { name: `Private ${i}`, visibility: 'private' })).visibility, 'private');
  const open = await created(a, { name: 'Public one', visibility: 'public' });
  const before = await rows();
  const res = await create(a, { name: 'Private 11', visibility: 'private' });
  assert.is(res.statusCode, 403);
  const e = res.json().error;
  assert.equal([e.feature, e.plan, e.required_plan, e.limit, e.usage], ['private_projects', 'pro', 'team', 10, 10]);
  assert.is(await rows(), before);
  const up = await patch(a, open.id, { visibility: 'private' });
  assert.is(up.statusCode, 403);
  assert.is(up.json().error.feature, 'private_projects');
  assert.is((await read(a, open.id)).json().visibility, 'public');
});

test('slugs are unique across accounts, suffixed when taken, and free again after deletion', async () => {
  const a = await t.account();
  const b = await t.account();
  const first = await created(a, { name: 'Shared Name' });
  const second = await created(b, { name: 'shared name' });
  assert.is(first.slug, 'shared-name');
  assert.match(second.slug, /^shared-name-[a-z0-9]{4}$/);
  assert.is(second.url, `https://${second.slug}.apps.example.test/`);
  const reserved = await created(a, { name: 'API' });
  assert.match(reserved.slug, /^api-[a-z0-9]{4}$/);
  const long = await created(b, { name: `${'a'.repeat(70)}` });
  assert.is(long.slug, 'a'.repeat(63));

  const gone = await del(a, first.id);
  assert.is(gone.statusCode, 202);
  const again = await created(b, { name: 'Shared Name' });
  assert.is(again.slug, 'shared-name');
  await settled(gone.json().operation.id);
});

test('update changes name, visibility and settings; null clears a setting; slug and URL stay', async () => {
  const a = await t.account({ plan: 'pro' });
  const p = await created(a, {
    name: 'Before',
    settings: { build_command: 'make', runtime: 'node', node_version: '20.x' },
  });
  await new Promise((r) => setTimeout(r, 5));
  const res = await patch(a, p.id, {
    name: 'After',
    visibility: 'private',
    settings: { build_command: null, start_command: 'node server.js' },
    runtime: null,
  });
  assert.is(res.statusCode, 200, res.body);
  const q = res.json();
  assert.is(q.name, 'After');
  assert.is(q.visibility, 'private');
  assert.is(q.slug, p.slug);
  assert.is(q.url, p.url);
  assert.equal(q.settings, { ...emptySettings, start_command: 'node server.js', node_version: '20.x' });
  assert.ok(Date.parse(q.updated_at) > Date.parse(p.updated_at));
  assert.equal((await read(a, p.id)).json(), q);
  assert.equal((await patch(a, p.id, {})).json(), q);
});

test('a bad update is 400 naming the field and changes nothing', async () => {
  const a = await t.account();
  const p = await created(a, { name: 'Stable', settings: { root_directory: 'web' } });
  const cases: [Record<string, unknown>, string][] = [
    [{ name: '' }, 'name'],
    [{ name: 'ok', slug: 'mine' }, 'slug'],
    [{ visibility: 'hidden' }, 'visibility'],
    [{ settings: { root_directory: '..' } }, 'root_directory'],
    [{ node_version: '20; rm -rf /' }, 'node_version'],
    [{ framework: 'jquery' }, 'framework'],
  ];
  for (const [payload, field] of cases) {
    const res = await patch(a, p.id, payload);
    assert.is(res.statusCode, 400, JSON.stringify(payload));
    assert.is(res.json().error.code, 'invalid_request');
    assert.is(res.json().error.details.field, field);
  }
  assert.equal((await read(a, p.id)).json(), p);
});

test(
  "another account's, a missing, a malformed and a deleting project are the same " + '404 for read, update and delete',
  async () => {
    const owner = await t.account();
    const other = await t.account();
    const p = await created(owner, { name: 'Mine' });
    const doomed = await created(owner, { name: 'Doomed' });
    const d = await del(owner, doomed.id);
    assert.is(d.statusCode, 202);
    const ids = [p.id, '00000000-0000-4000-8000-000000000000', 'not-a-uuid', doomed.id];
    const bodies: string[] = [];
    for (const id of ids) {
      const who = id === doomed.id ? owner : other;
      for (const res of [await read(who, id), await patch(who, id, { name: 'Hijacked' }), await del(who, id)]) {
        assert.is(res.statusCode, 404, `${id}: ${res.body}`);
        const { code, message, details } = res.json().error;
        bodies.push(JSON.stringify({ code, message, details }));
      }
    }
    assert.is(new Set(bodies).size, 1);
    assert.is(JSON.parse(bodies[0]).code, 'not_found');
    assert.equal((await read(owner, p.id)).json(), p);
    assert.is(await ops({ projectId: p.id }), 0);
    await settled(d.json().operation.id);
  },
);

test('list pages with next_cursor until null, newest first, with no duplicates', async () => {
  const a = await t.account({ plan: 'pro' });
  const made: string[] = [];
  for (let i = 0; i < 5; i++) made.push((await created(a, { name: `Page ${i}` })).id);
  const seen: string[] = [];
  const sizes: number[] = [];
  let cursor: string | null = null;
  do {
    const res = await list(a, `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    assert.is(res.statusCode, 200, res.body);
    const body = res.json();
    sizes.push(body.projects.length);
    seen.push(...body.projects.map((p: { id: string }) => p.id));
    cursor = body.next_cursor;
  } while (cursor);
  assert.equal(sizes, [2, 2, 1]);
  assert.equal(seen, [...made].reverse());

  const all = await list(a);
  assert.is(all.json().projects.length, 5);
  assert.is(all.json().next_cursor, null);
  const bare = await t.app.inject({ method: 'GET', url: '/api/v1/projects', headers: a.auth });
  assert.equal(bare.json(), all.json());
  const other = await t.account();
  assert.equal((await list(other)).json(), { projects: [], next_cursor: null });
});

test('list refuses a bad cursor and a limit out of range with 400', async () => {
  const a = await t.account();
  const forged = Buffer.from(JSON.stringify(['yesterday', 'x'])).toString('base64url');
  for (const q of ['?cursor=garbage', `?cursor=${forged}`, '?cursor=', '?limit=101', '?limit=0', '?limit=ten']) {
    const res = await list(a, q);
    assert.is(res.statusCode, 400, q);
    assert.is(res.json().error.code, 'invalid_request');
    assert.is(res.json().error.details.field, q.startsWith('?cursor') ? 'cursor' : 'limit', q);
  }
  assert.is((await list(a, '?limit=100')).statusCode, 200);
});

test('delete answers 202 with a running operation, hides the project at once, then finishes', async () => {
  const a = await t.account();
  const p = await created(a, { name: 'Short lived' });
  const res = await del(a, p.id);
  assert.is(res.statusCode, 202);
  const body = res.json();
  assert.is(body.action, 'project_deletion_queued');
  assert.match(body.operation.id, UUID);
  assert.equal(
    { status: body.operation.status, progress: body.operation.progress },
    { status: 'running', progress: 5 },
  );
  assert.is((await read(a, p.id)).statusCode, 404);
  assert.not.ok((await list(a)).json().projects.some((x: { id: string }) => x.id === p.id));

  const op = await settled(body.operation.id);
  assert.equal([op.kind, op.progress, op.accountId, op.projectId], ['delete_project', 100, a.accountId, p.id]);
  assert.ok(op.finishedAt);
  assert.is(await rows({ id: p.id }), 0);
  assert.is((await del(a, p.id)).statusCode, 404);
});

test('deleted projects no longer count against the plan', async () => {
  const a = await t.account();
  const made = [];
  for (let i = 0; i < 3; i++) made.push(await created(a, { name: `Slot ${i}` }));
  assert.is((await create(a, { name: 'Slot 3' })).statusCode, 403);
  const d = await del(a, made[0].id);
  assert.is((await create(a, { name: 'Slot 3' })).statusCode, 201);
  await settled(d.json().operation.id);
});

test('every project call needs a bearer token', async () => {
  for (const [method, url] of [
    ['GET', '/api/v1/projects/'],
    ['POST', '/api/v1/projects/'],
    ['GET', '/api/v1/projects/00000000-0000-4000-8000-000000000000/'],
    ['PATCH', '/api/v1/projects/00000000-0000-4000-8000-000000000000/'],
    ['DELETE', '/api/v1/projects/00000000-0000-4000-8000-000000000000/'],
  ] as const) {
    const res = await t.app.inject({
      method,
      url,
      payload: method === 'POST' || method === 'PATCH' ? { name: 'x' } : undefined,
    });
    assert.is(res.statusCode, 401, `${method} ${url}`);
    assert.is(res.json().error.code, 'unauthorized');
  }
});

test('the OpenAPI document lists the project paths with their trailing slash', async () => {
  const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
  assert.equal(Object.keys(doc.paths['/api/v1/projects/']).sort(), ['get', 'post']);
  assert.equal(Object.keys(doc.paths['/api/v1/projects/{projectID}/']).sort(), ['delete', 'get', 'patch']);
  assert.equal(doc.paths['/api/v1/projects/'].post.tags, ['Projects']);
});

test.run();
