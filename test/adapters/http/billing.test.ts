// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { plans } from '../../../core/billing/plans.js';
import { Account } from '../../../core/entities/account.js';
import { testApi, type TestAccount, type TestApi } from '../../helpers/api.js';

let t: TestApi;
test.before(async () => {
  t = await testApi();
});
test.after(async () => t?.close());

const get = (a: TestAccount, path: string) =>
  t.app.inject({ method: 'GET', url: `/api/v1/billing/${path}`, headers: a.auth });
const createProject = (a: TestAccount, name: string, visibility = 'draft') =>
  t.app.inject({ method: 'POST', url: '/api/v1/projects/', headers: a.auth, payload: { name, visibility } });

test('entitlements of a free account: limits, usage and capabilities', async () => {
  const a = await t.account();
  await createProject(a, 'One');
  await createProject(a, 'Two', 'public');
  const res = await get(a, 'entitlements');
  assert.is(res.statusCode, 200);
  assert.equal(res.json(), {
    plan: 'free',
    limits: plans.free.limits,
    usage: {
      projects: 2,
      private_projects: 0,
      deployments_per_day: null,
      customer_subdomains: 0,
      concurrent_builds: null,
    },
    capabilities: {
      visibilities: ['draft', 'public'],
      private_projects: false,
      access_grants: false,
      environment_variables: true,
      customer_subdomains: false,
      instant_rollback: false,
    },
  });
});

test('entitlements of a pro account count private projects; team limits are unlimited (null)', async () => {
  const a = await t.account({ plan: 'pro' });
  assert.is((await createProject(a, 'Hidden', 'private')).statusCode, 201);
  assert.is((await createProject(a, 'Shown', 'public')).statusCode, 201);
  const body = (await get(a, 'entitlements')).json();
  assert.is(body.plan, 'pro');
  assert.equal([body.usage.projects, body.usage.private_projects], [2, 1]);
  assert.equal(body.capabilities, {
    visibilities: ['draft', 'public', 'private'],
    private_projects: true,
    access_grants: true,
    environment_variables: true,
    customer_subdomains: true,
    instant_rollback: true,
  });

  const team = await t.account({ plan: 'team' });
  const limits = (await get(team, 'entitlements')).json().limits;
  assert.is(limits.projects, null);
  assert.is(limits.private_projects, null);
  assert.is(limits.concurrent_builds, 5);
});

test('plans lists free, pro and team, cheapest first, with their limits', async () => {
  const a = await t.account();
  const res = await get(a, 'plans');
  assert.is(res.statusCode, 200);
  const list = res.json().plans;
  assert.equal(
    list.map((p: { id: string }) => p.id),
    ['free', 'pro', 'team'],
  );
  assert.equal(list[1], plans.pro);
});

test('subscription answers plan, state and billing category', async () => {
  const a = await t.account({ plan: 'pro' });
  await t.kernel.orm.em
    .fork()
    .nativeUpdate(Account, { id: a.accountId }, { billingCategory: 'business', subscriptionStatus: 'past_due' });
  const res = await get(a, 'subscription');
  assert.is(res.statusCode, 200);
  assert.equal(res.json(), {
    plan: 'pro',
    plan_name: 'Pro',
    price_cents: 2000,
    subscription_status: 'past_due',
    billing_category: 'business',
  });
});

test('the billing calls need a bearer token', async () => {
  for (const path of ['entitlements', 'plans', 'subscription']) {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/billing/${path}` });
    assert.is(res.statusCode, 401, path);
    assert.is(res.json().error.code, 'unauthorized');
  }
});

test('the OpenAPI document has the five Account and billing calls', async () => {
  const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
  const calls = Object.entries(doc.paths as Record<string, Record<string, { tags?: string[] }>>).flatMap(
    ([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => op.tags?.includes('Account and billing'))
        .map(([method]) => `${method.toUpperCase()} ${path}`),
  );
  assert.equal(calls.sort(), [
    'GET /api/v1/billing/entitlements',
    'GET /api/v1/billing/plans',
    'GET /api/v1/billing/subscription',
    'GET /api/v1/me',
    'PATCH /api/v1/me',
  ]);
});

test.run();
