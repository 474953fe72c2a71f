// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ENTITLEMENT_SERVICE, type EntitlementService } from '../../../core/billing/entitlement-service.js';
import { Account } from '../../../core/entities/account.js';
import { HoistError } from '../../../core/errors.js';
import { testApi, type TestApi } from '../../helpers/api.js';

let t: TestApi;
let service: EntitlementService;
test.before(async () => {
  t = await testApi();
  service = t.kernel.get<EntitlementService>(ENTITLEMENT_SERVICE);
});
test.after(async () => t?.close());

async function restriction(fn: () => Promise<void>): Promise<Record<string, unknown>> {
  try {
    await t.inContext(fn);
  } catch (err) {
    assert.instance(err, HoistError);
    assert.is((err as HoistError).code, 'plan_restricted');
    return (err as HoistError).details;
  }
  throw new Error('not refused');
}

test('assertWithin allows up to the limit and refuses beyond it with the cheapest plan that fits', async () => {
  const { accountId } = await t.account();
  await t.inContext(() => service.assertWithin(accountId, 'projects', 2, 1));
  assert.equal(await restriction(() => service.assertWithin(accountId, 'projects', 3)), {
    feature: 'projects',
    plan: 'free',
    required_plan: 'pro',
    limit: 3,
    usage: 3,
  });
  assert.is((await restriction(() => service.assertWithin(accountId, 'projects', 60))).required_plan, 'team');
  assert.is((await restriction(() => service.assertWithin(accountId, 'customer_subdomains', 0))).limit, 0);
});

test('a size check passes the size as usage; no plan fitting gives required_plan null', async () => {
  const { accountId } = await t.account({ plan: 'pro' });
  await t.inContext(() => service.assertWithin(accountId, 'archive_bytes', 100_000_000, 0));
  assert.equal(await restriction(() => service.assertWithin(accountId, 'archive_bytes', 100_000_001, 0)), {
    feature: 'archive_bytes',
    plan: 'pro',
    required_plan: null,
    limit: 100_000_000,
    usage: 100_000_001,
  });
});

test('null limits are unlimited', async () => {
  const { accountId } = await t.account({ plan: 'team' });
  await t.inContext(() => service.assertWithin(accountId, 'projects', 1_000_000, 5));
});

test("assertVisibility follows the plan's visibilities", async () => {
  const free = await t.account();
  const pro = await t.account({ plan: 'pro' });
  await t.inContext(() => service.assertVisibility(free.accountId, 'public'));
  await t.inContext(() => service.assertVisibility(pro.accountId, 'private'));
  assert.equal(await restriction(() => service.assertVisibility(free.accountId, 'private')), {
    feature: 'visibility:private',
    plan: 'free',
    required_plan: 'pro',
    limit: null,
    usage: null,
  });
  assert.is((await restriction(() => service.assertVisibility(pro.accountId, 'unheard-of'))).required_plan, null);
});

test('planOf reads the stored plan: a change at once, an unknown plan as free, a missing account refused', async () => {
  const { accountId } = await t.account({ plan: 'pro' });
  assert.is((await t.inContext(() => service.planOf(accountId))).id, 'pro');
  const em = t.kernel.orm.em.fork();
  await em.nativeUpdate(Account, { id: accountId }, { plan: 'team' });
  assert.is((await t.inContext(() => service.planOf(accountId))).id, 'team');
  await em.nativeUpdate(Account, { id: accountId }, { plan: 'retired-plan' });
  assert.is((await t.inContext(() => service.planOf(accountId))).id, 'free');
  const missing = await t.inContext(() => service.planOf('00000000-0000-4000-8000-000000000000')).catch((e) => e);
  assert.instance(missing, Error);
  assert.match(String(missing.message), /not found/);
});

test.run();
