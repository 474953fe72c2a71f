// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { EnvironmentVariable } from '../../../core/entities/environment-variable.js';
import { EnvironmentSnapshot } from '../../../core/entities/environment-snapshot.js';
import { Project } from '../../../core/entities/project.js';
import { ProjectKey } from '../../../core/entities/project-key.js';
import { ENVIRONMENT_SERVICE, type EnvironmentService } from '../../../core/environment/environment-service.js';
import { liveHoist, zipOf, type LiveHoist } from '../../helpers/live.js';

const SECRET = `s3cr3t-${Math.random().toString(36).slice(2)}-value`;
let h: LiveHoist;
// The free plan allows three projects: each test that needs free-plan limits takes a fresh account.
let free: string;
let other: string;
const bodies: string[] = [];

test.before(async () => {
  h = await liveHoist();
  ({ token: other } = await h.login('pro'));
});
test.before.each(async () => {
  ({ token: free } = await h.login('free'));
});
test.after(async () => h?.close());

/** A JSON call to the API; every answer is kept to be searched for the secret. */
async function call(token: string | null, method: string, path: string, body?: unknown) {
  const res = await fetch(`${h.api}/api/v1${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  bodies.push(text);
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

const newProject = async (token: string, name: string) =>
  (await call(token, 'POST', '/projects/', { name })).body.id as string;
const names = async (token: string, id: string) =>
  (await call(token, 'GET', `/projects/${id}/environment`)).body.environment.map((v: { name: string }) => v.name);
const rows = (projectId: string) => h.running.kernel.orm.em.fork().find(EnvironmentVariable, { projectId });

test(
  'set creates (201) then replaces (200); list shows names, scopes and keyed ' +
    'digests, never values; delete 204 then 404',
  async () => {
    const id = await newProject(free, 'env-basics');
    const created = await call(free, 'PUT', `/projects/${id}/environment/API_KEY`, { value: SECRET });
    assert.is(created.status, 201, JSON.stringify(created.body));
    assert.is(created.body.name, 'API_KEY');
    assert.is(created.body.scope, 'both');
    assert.match(created.body.digest, /^hmac-sha256:[0-9a-f]{64}$/);
    assert.is(created.body.value, undefined);

    const again = await call(free, 'PUT', `/projects/${id}/environment/API_KEY`, { value: SECRET, scope: 'runtime' });
    assert.is(again.status, 200);
    assert.is(again.body.digest, created.body.digest, 'same value, same digest');
    assert.is(again.body.scope, 'runtime');
    await call(free, 'PUT', `/projects/${id}/environment/OTHER`, { value: `${SECRET}!`, scope: 'build' });

    const list = await call(free, 'GET', `/projects/${id}/environment`);
    assert.is(list.status, 200);
    assert.equal(
      list.body.environment.map((v: any) => [v.name, v.scope]),
      [
        ['API_KEY', 'runtime'],
        ['OTHER', 'build'],
      ],
    );
    assert.is.not(list.body.environment[0].digest, list.body.environment[1].digest);
    for (const v of list.body.environment)
      assert.equal(Object.keys(v).sort(), ['created_at', 'digest', 'name', 'scope', 'target', 'updated_at']);

    // Another project holding the same value shows another digest (the key is per project).
    const second = await newProject(free, 'env-basics-2');
    const elsewhere = await call(free, 'PUT', `/projects/${second}/environment/API_KEY`, { value: SECRET });
    assert.is.not(elsewhere.body.digest, created.body.digest);

    const stored = await rows(id);
    assert.is(stored.length, 2);
    for (const r of stored) assert.not.ok(JSON.stringify(r).includes(SECRET), 'stored encrypted');

    assert.is((await call(free, 'DELETE', `/projects/${id}/environment/OTHER`)).status, 204);
    const gone = await call(free, 'DELETE', `/projects/${id}/environment/OTHER`);
    assert.is(gone.status, 404);
    assert.is(gone.body.error.code, 'not_found');
    assert.equal(await names(free, id), ['API_KEY']);
  },
);

test('bad names, reserved names, bad scopes and bad values are refused with 400 and store nothing', async () => {
  const id = await newProject(free, 'env-bad');
  const cases: [string, unknown, string][] = [
    ['1ABC', { value: 'x' }, 'name'],
    ['A-B', { value: 'x' }, 'name'],
    ['A%20B', { value: 'x' }, 'name'],
    ['PORT', { value: 'x' }, 'name'],
    ['HOST', { value: 'x' }, 'name'],
    ['PATH', { value: 'x' }, 'name'],
    ['NODE_OPTIONS', { value: 'x' }, 'name'],
    ['HOIST_TOKEN', { value: 'x' }, 'name'],
    ['hoist_token', { value: 'x' }, 'name'],
    ['npm_config_registry', { value: 'x' }, 'name'],
    ['NPM_CONFIG_REGISTRY', { value: 'x' }, 'name'],
    ['OK_NAME', { value: SECRET, scope: 'deploy' }, 'scope'],
    ['OK_NAME', { value: { nested: SECRET } }, 'value'],
    ['OK_NAME', { scope: 'both' }, 'value'],
    ['OK_NAME', { value: `${SECRET}\u0000` }, 'value'],
    ['OK_NAME', { value: `${SECRET}\ud800` }, 'value'],
    ['OK_NAME', { value: `\udc00${SECRET}😀` }, 'value'],
    ['OK_NAME', { value: SECRET, extra: 1 }, 'extra'],
    ['A'.repeat(256), { value: 'x' }, 'name'],
  ];
  for (const [name, body, field] of cases) {
    const res = await call(free, 'PUT', `/projects/${id}/environment/${name}`, body);
    assert.is(res.status, 400, `${name} ${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
    assert.is(res.body.error.code, 'invalid_request');
    assert.ok(
      String(res.body.error.details.field ?? '').includes(field) || res.body.error.message.includes(field),
      `${name}: ${JSON.stringify(res.body)}`,
    );
  }
  assert.equal(await names(free, id), []);
  assert.is((await rows(id)).length, 0);
});

test(
  "a value over the plan's size and a variable over its count are refused with 403 " + 'and the plan fields',
  async () => {
    const id = await newProject(free, 'env-limits');
    const big = await call(free, 'PUT', `/projects/${id}/environment/BIG`, { value: 'é'.repeat(2049) });
    assert.is(big.status, 403);
    assert.equal(
      {
        code: big.body.error.code,
        feature: big.body.error.feature,
        plan: big.body.error.plan,
        required_plan: big.body.error.required_plan,
        limit: big.body.error.limit,
        usage: big.body.error.usage,
      },
      {
        code: 'plan_restricted',
        feature: 'environment_value_bytes',
        plan: 'free',
        required_plan: 'pro',
        limit: 4096,
        usage: 4098,
      },
    );
    assert.is((await call(free, 'PUT', `/projects/${id}/environment/FITS`, { value: 'x'.repeat(4096) })).status, 201);
    for (let i = 1; i < 20; i++)
      assert.is((await call(free, 'PUT', `/projects/${id}/environment/V${i}`, { value: 'v' })).status, 201);
    const many = await call(free, 'PUT', `/projects/${id}/environment/V20`, { value: 'v' });
    assert.is(many.status, 403);
    assert.is(many.body.error.feature, 'environment_variables_per_project');
    assert.is(many.body.error.limit, 20);
    assert.is(many.body.error.usage, 20);
    assert.is(many.body.error.required_plan, 'pro');
    assert.is(
      (await call(free, 'PUT', `/projects/${id}/environment/V1`, { value: 'replaced' })).status,
      200,
      'replacing at the limit is fine',
    );
    assert.is((await rows(id)).length, 20);
    assert.not.ok((await names(free, id)).includes('V20'));
    assert.not.ok((await names(free, id)).includes('BIG'));
  },
);

test("concurrent sets never pass the plan's count: exactly the limit is created, the rest is 403", async () => {
  const id = await newProject(free, 'env-race');
  const answers = await Promise.all(
    Array.from({ length: 30 }, (_, i) => call(free, 'PUT', `/projects/${id}/environment/R${i}`, { value: 'v' })),
  );
  const statuses = answers.map((a) => a.status);
  assert.is(statuses.filter((s) => s === 201).length, 20, statuses.join(' '));
  assert.is(statuses.filter((s) => s === 403).length, 10, statuses.join(' '));
  assert.is((await rows(id)).length, 20);
});

test("another account's project answers 404 and no token 401, and nothing changes", async () => {
  const id = await newProject(free, 'env-owned');
  await call(free, 'PUT', `/projects/${id}/environment/MINE`, { value: SECRET });
  for (const [method, path, body] of [
    ['GET', `/projects/${id}/environment`, undefined],
    ['PUT', `/projects/${id}/environment/MINE`, { value: 'stolen' }],
    ['PUT', `/projects/${id}/environment/NEW`, { value: 'x' }],
    ['DELETE', `/projects/${id}/environment/MINE`, undefined],
  ] as const) {
    const foreign = await call(other, method, path, body);
    assert.is(foreign.status, 404, `${method} ${path}`);
    assert.is(foreign.body.error.code, 'not_found');
    const anonymous = await call(null, method, path, body);
    assert.is(anonymous.status, 401, `${method} ${path}`);
    assert.is(anonymous.body.error.code, 'unauthorized');
  }
  const stored = await rows(id);
  assert.equal(
    stored.map((r) => r.name),
    ['MINE'],
  );
  const digest = (await call(free, 'GET', `/projects/${id}/environment`)).body.environment[0].digest;
  assert.is(stored[0].digest, digest, 'the value is unchanged');
});

const upload = async (token: string, fields: Record<string, string>, path = '/api/v1/local-to-live') => {
  const res = await h.upload(token, path, await zipOf({ 'index.html': '<p>env</p>' }), fields);
  const text = await res.text();
  bodies.push(text);
  return { status: res.status, body: JSON.parse(text) };
};
const projectNamed = (name: string) => h.running.kernel.orm.em.fork().findOne(Project, { name });

test('Local-to-Live takes an environment part when it creates the project', async () => {
  const env = {
    API_KEY: SECRET,
    BUILD_FLAG: { value: 'on', scope: 'build' },
    RUN_FLAG: { value: 'yes', scope: 'runtime' },
    PLAIN: { value: 'p' },
    STAGING_ONLY: { value: 's', target: 'preview' },
  };
  const res = await upload(free, { name: 'env-l2l', environment: JSON.stringify(env) });
  assert.is(res.status, 202, JSON.stringify(res.body));
  const list = (await call(free, 'GET', `/projects/${res.body.project.id}/environment`)).body.environment;
  assert.equal(
    list.map((v: any) => [v.name, v.scope, v.target]),
    [
      ['API_KEY', 'both', 'all'],
      ['BUILD_FLAG', 'build', 'all'],
      ['PLAIN', 'both', 'all'],
      ['RUN_FLAG', 'runtime', 'all'],
      ['STAGING_ONLY', 'both', 'preview'],
    ],
  );
  await h.waitFor(free, res.body.operation.id);
});

test('Local-to-Live refuses a bad environment part with 400 (or 403) and creates nothing', async () => {
  const cases: [string, number, string, RegExp][] = [
    [`{"API_KEY": "${SECRET}"`, 400, 'environment', /not valid JSON/],
    [`["${SECRET}"]`, 400, 'environment', /JSON object/],
    [JSON.stringify({ 'BAD-NAME': SECRET }), 400, 'environment.BAD-NAME', /BAD-NAME/],
    [JSON.stringify({ PORT: '1' }), 400, 'environment.PORT', /PORT is reserved/],
    [JSON.stringify({ HOIST_X: '1' }), 400, 'environment.HOIST_X', /reserved/],
    [JSON.stringify({ API_KEY: 5 }), 400, 'environment.API_KEY', /API_KEY must be a string/],
    [
      JSON.stringify({ API_KEY: { value: SECRET, scope: 'sometimes' } }),
      400,
      'environment.API_KEY.scope',
      /scope of API_KEY/,
    ],
    [
      JSON.stringify({ API_KEY: { value: SECRET, other: 1 } }),
      400,
      'environment.API_KEY',
      /API_KEY must be a string or an object/,
    ],
    [JSON.stringify({ API_KEY: { scope: 'both' } }), 400, 'environment.API_KEY.value', /API_KEY must be a string/],
    [
      JSON.stringify({ API_KEY: { value: SECRET, target: 'staging' } }),
      400,
      'environment.API_KEY.target',
      /target of API_KEY must be one of all, production, preview/,
    ],
  ];
  for (const [text, status, field, message] of cases) {
    const res = await upload(free, { name: 'env-refused', environment: text });
    assert.is(res.status, status, `${text}: ${JSON.stringify(res.body)}`);
    assert.is(res.body.error.details.field, field, text);
    assert.match(res.body.error.message, message);
  }
  const tooBig = await upload(free, { name: 'env-refused', environment: JSON.stringify({ BIG: 'x'.repeat(4097) }) });
  assert.is(tooBig.status, 403);
  assert.is(tooBig.body.error.feature, 'environment_value_bytes');
  const tooMany = await upload(free, {
    name: 'env-refused',
    environment: JSON.stringify(Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`V${i}`, 'v']))),
  });
  assert.is(tooMany.status, 403);
  assert.equal(
    [tooMany.body.error.feature, tooMany.body.error.limit, tooMany.body.error.usage],
    ['environment_variables_per_project', 20, 0],
  );
  assert.is(await projectNamed('env-refused'), null, 'no project was created');
  const em = h.running.kernel.orm.em.fork();
  assert.is(
    await em.count(ProjectKey, {}),
    await em.count(ProjectKey, { projectId: { $in: (await em.find(Project, {})).map((p) => p.id) } }),
    'no orphan key',
  );
});

test(
  'Local-to-Live with an environment part for an existing project → 400, nothing ' +
    'stored; the project-level route has no such part',
  async () => {
    const first = await upload(other, { name: 'env-existing' });
    assert.is(first.status, 202);
    await h.waitFor(other, first.body.operation.id);
    const res = await upload(other, { name: 'env-existing', environment: JSON.stringify({ API_KEY: SECRET }) });
    assert.is(res.status, 400);
    assert.is(res.body.error.details.field, 'environment');
    assert.match(res.body.error.message, /environment routes|PUT \/api\/v1\/projects\/.+\/environment/);
    const projectLevel = await upload(
      other,
      { environment: JSON.stringify({ API_KEY: SECRET }) },
      `/api/v1/projects/${first.body.project.id}/local-to-live`,
    );
    assert.is(projectLevel.status, 400);
    assert.is(projectLevel.body.error.details.field, 'environment');
    assert.is((await rows(first.body.project.id)).length, 0);
  },
);

test('deleting a project removes its variables, snapshots and key', async () => {
  const res = await upload(other, { name: 'env-deleted', environment: JSON.stringify({ API_KEY: SECRET }) });
  const id = res.body.project.id as string;
  await h.waitFor(other, res.body.operation.id);
  const em = h.running.kernel.orm.em.fork();
  // A static release runs nothing and takes no snapshot: one is taken as a Node.js release's deploy takes it.
  assert.is(await em.count(EnvironmentSnapshot, { projectId: id }), 0);
  const environment = h.running.kernel.get<EnvironmentService>(ENVIRONMENT_SERVICE);
  assert.equal(await environment.forRuntime(res.body.operation.id, id, 'production'), { API_KEY: SECRET });
  assert.is(await em.count(ProjectKey, { projectId: id }), 1);
  assert.is(await em.count(EnvironmentSnapshot, { projectId: id }), 1);
  const del = await call(other, 'DELETE', `/projects/${id}/`);
  assert.is(del.status, 202);
  await h.waitFor(other, del.body.operation.id);
  for (const entity of [EnvironmentVariable, EnvironmentSnapshot, ProjectKey])
    assert.is(await em.fork().count(entity as never, { projectId: id }), 0);
});

test('the secret value is in no answer', () => {
  assert.ok(bodies.length > 50);
  for (const b of bodies) assert.not.ok(b.includes(SECRET), b);
});

test.run();
