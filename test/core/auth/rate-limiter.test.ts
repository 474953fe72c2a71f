// legs: db
import { RequestContext } from '@mikro-orm/core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Kernel } from '../../../adapters/kernel.js';
import { RateLimiter } from '../../../core/auth/rate-limiter.js';
import { RateBucket } from '../../../core/entities/rate-bucket.js';
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

test('counts hits in a fixed window and says how long the window has left', async () => {
  await inContext(async () => {
    assert.equal(await limiter.peek('a', 60), { count: 0, retryAfter: 50 });
    assert.equal(await limiter.hit('a', 60), { count: 1, retryAfter: 50 });
    now = new Date('2030-01-01T00:00:59.500Z');
    assert.equal(await limiter.hit('a', 60), { count: 2, retryAfter: 1 });
    assert.equal(await limiter.peek('b', 60), { count: 0, retryAfter: 1 });
  });
});

test('a new window starts from one, and clear forgets the key', async () => {
  await inContext(async () => {
    now = new Date('2030-01-01T00:01:00Z');
    assert.equal(await limiter.peek('a', 60), { count: 0, retryAfter: 60 });
    assert.equal(await limiter.hit('a', 60), { count: 1, retryAfter: 60 });
    await limiter.clear('a');
    assert.is(await k.orm.em.count(RateBucket, { key: 'a' }), 0);
    assert.equal(await limiter.hit('a', 60), { count: 1, retryAfter: 60 });
  });
});

test('concurrent hits on a new key and across a window change are never lost', async () => {
  await inContext(async () => {
    const hits = (key: string) => Promise.all(Array.from({ length: 20 }, () => RequestContext.create(k.orm.em.fork(), () => limiter.hit(key, 60))));
    await hits('busy');
    assert.is((await limiter.peek('busy', 60)).count, 20);
    now = new Date('2030-01-01T00:02:00Z');
    await hits('busy');
    assert.is((await limiter.peek('busy', 60)).count, 20);
    assert.is(await k.orm.em.count(RateBucket, { key: 'busy' }), 1);
  });
});

test('a new key drops buckets untouched for a day', async () => {
  await inContext(async () => {
    now = new Date('2030-01-03T00:00:00Z');
    await limiter.hit('fresh', 60);
    assert.equal((await k.orm.em.find(RateBucket, {}, { orderBy: { key: 'asc' } })).map((b) => b.key), ['fresh']);
  });
});

test.run();
