// legs: db
import { RequestContext } from '@mikro-orm/core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Kernel } from '../../../adapters/kernel.js';
import { RateLimiter } from '../../../core/auth/rate-limiter.js';
import { RateHit } from '../../../core/entities/rate-hit.js';
import { testKernel } from '../../helpers/kernel.js';

let k: Kernel;
let now = new Date('2030-01-01T00:00:10Z');
let limiter: RateLimiter;
test.before(async () => {
  k = await testKernel();
  limiter = new RateLimiter(k.orm.em, { now: () => now });
});
test.after(async () => k?.stop());

const inContext = <T>(fn: () => Promise<T>) => RequestContext.create(k.orm.em.fork(), fn);
const at = (iso: string) => (now = new Date(`2030-01-01T${iso}Z`));

test('at most `limit` hits in the window; the refusal says when the oldest one leaves it', async () => {
  await inContext(async () => {
    at('00:00:10');
    assert.equal(await limiter.hit('a', 3, 60), { allowed: true, count: 1, retryAfter: 0 });
    at('00:00:20');
    assert.equal(await limiter.hit('a', 3, 60), { allowed: true, count: 2, retryAfter: 0 });
    assert.equal(await limiter.hit('a', 3, 60), { allowed: true, count: 3, retryAfter: 0 });
    at('00:00:30');
    assert.equal(await limiter.hit('a', 3, 60), { allowed: false, count: 3, retryAfter: 40 });
    assert.is(await limiter.count('a', 60), 3, 'a refused hit is not counted');
    at('00:01:10.500');
    assert.equal(
      await limiter.hit('a', 3, 60),
      { allowed: true, count: 3, retryAfter: 0 },
      'the 00:00:10 hit left the window',
    );
    assert.equal(
      await limiter.hit('a', 3, 60),
      { allowed: false, count: 3, retryAfter: 10 },
      'next, the two of 00:00:20 leave',
    );
    assert.is(await limiter.count('b', 60), 0);
  });
});

test('a burst across where a fixed window would end gets the limit, not twice the limit', async () => {
  await inContext(async () => {
    at('00:10:59');
    for (let i = 0; i < 3; i++) assert.ok((await limiter.hit('edge', 3, 60)).allowed);
    at('00:11:01');
    for (let i = 0; i < 3; i++)
      assert.equal(await limiter.hit('edge', 3, 60), { allowed: false, count: 3, retryAfter: 58 });
    at('00:11:59.001');
    assert.ok((await limiter.hit('edge', 3, 60)).allowed);
  });
});

test('knocking on while refused does not push the end of the wait further', async () => {
  await inContext(async () => {
    at('00:20:00');
    assert.ok((await limiter.hit('knock', 1, 60)).allowed);
    for (const t of ['00:20:10', '00:20:30', '00:20:59']) {
      at(t);
      assert.is((await limiter.hit('knock', 1, 60)).allowed, false);
    }
    at('00:21:00.001');
    assert.ok((await limiter.hit('knock', 1, 60)).allowed);
    assert.is(await k.orm.em.count(RateHit, { key: 'knock' }), 1, 'expired and refused hits leave no rows');
  });
});

test('clear forgets the key', async () => {
  await inContext(async () => {
    at('00:30:00');
    for (let i = 0; i < 2; i++) await limiter.hit('c', 2, 60);
    assert.is((await limiter.hit('c', 2, 60)).allowed, false);
    await limiter.clear('c');
    assert.is(await k.orm.em.count(RateHit, { key: 'c' }), 0);
    assert.equal(await limiter.hit('c', 2, 60), { allowed: true, count: 1, retryAfter: 0 });
  });
});

test('concurrent hits are never lost and never let more than the limit through', async () => {
  await inContext(async () => {
    at('00:40:00');
    const hits = (key: string, limit: number) =>
      Promise.all(
        Array.from({ length: 20 }, () => RequestContext.create(k.orm.em.fork(), () => limiter.hit(key, limit, 60))),
      );
    const open = await hits('busy', 100);
    assert.is(open.filter((d) => d.allowed).length, 20);
    assert.is(await limiter.count('busy', 60), 20);
    const tight = await hits('tight', 5);
    // Each counts the others written before it: at the limit they may all be refused, never all let through.
    const allowed = tight.filter((d) => d.allowed).length;
    assert.ok(allowed <= 5, `${allowed} let through`);
    assert.is(await limiter.count('tight', 60), allowed);
    for (let i = allowed; i < 5; i++) assert.ok((await limiter.hit('tight', 5, 60)).allowed);
    assert.is((await limiter.hit('tight', 5, 60)).allowed, false);
  });
});

test("a key's first hit drops hits nobody has counted for a day", async () => {
  await inContext(async () => {
    at('00:50:00');
    now = new Date('2030-01-03T00:00:00Z');
    await limiter.hit('fresh', 3, 60);
    assert.equal(
      (await k.orm.em.find(RateHit, {}, { orderBy: { key: 'asc' } })).map((h) => h.key),
      ['fresh'],
    );
  });
});

test.run();
