import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { principalTags, revokedTag, sessionKey, userKey } from '../../../core/auth/session-cache.js';
import { TaggedCache } from '../../../core/caching/tagged-cache.js';
import type { Principal } from '../../../core/auth/principal.js';

const who = (n: number, user = 'u1') => ({ userId: user, accountId: 'a1', email: 'e@x', sessionId: `s${n}` });
const far = 1e15;
const tokens = (max = 10, ttl = 60_000) => {
  const c = new TaggedCache<Principal>(max, ttl);
  const put = (token: string, p: Principal, expiresAt: number, now: number, epoch = c.epoch) =>
    c.put(token, p, principalTags(p), now, epoch, expiresAt);
  return { c, put };
};

test('a cached entry answers until its expiry, and not at or after it', () => {
  const { c, put } = tokens();
  put('t1', who(1), 1_500, 1_000);
  assert.equal(c.get('t1', 1_499), who(1));
  assert.is(c.get('t1', 1_500), undefined);
  assert.is(c.size, 0, 'an expired entry is dropped when met');
});

test('no entry outlives the cache bound, whatever its own expiry says', () => {
  const { c, put } = tokens(10, 5_000);
  put('t1', who(1), far, 1_000);
  assert.ok(c.get('t1', 5_999));
  assert.is(c.get('t1', 6_000), undefined);
  c.put('v', who(2), [], 1_000, c.epoch);
  assert.ok(c.get('v', 5_999), 'without an expiry of its own, the bound alone');
  assert.is(c.get('v', 6_000), undefined);
});

test('beyond its size, the least recently used entry goes first', () => {
  const { c, put } = tokens(2);
  put('t1', who(1), far, 0);
  put('t2', who(2), far, 0);
  assert.ok(c.get('t1', 1)); // t2 is now the least recently used
  put('t3', who(3), far, 0);
  assert.is(c.size, 2);
  assert.ok(c.get('t1', 1));
  assert.is(c.get('t2', 1), undefined);
  assert.ok(c.get('t3', 1));
});

test('size 0 caches nothing', () => {
  const { c, put } = tokens(0);
  put('t1', who(1), far, 0);
  assert.is(c.get('t1', 1), undefined);
});

test('dropping a tag drops what it tags only: a session its tokens, a user all of theirs', () => {
  const { c, put } = tokens();
  put('t1', who(1), far, 0);
  put('t1b', who(1), far, 0);
  put('t2', who(2), far, 0);
  put('t3', who(3, 'u2'), far, 0);
  c.drop(sessionKey('s1'));
  assert.is(c.get('t1', 1), undefined);
  assert.is(c.get('t1b', 1), undefined);
  assert.ok(c.get('t2', 1));
  c.drop(userKey('u1'));
  assert.is(c.get('t2', 1), undefined);
  assert.ok(c.get('t3', 1), "another user's token stays");
  c.drop(sessionKey('unknown'));
  assert.ok(c.get('t3', 1));
});

test('an entry put again under its key loses its old tags', () => {
  const c = new TaggedCache<string>(10, 60_000);
  c.put('k', 'old', ['a'], 0, c.epoch);
  c.put('k', 'new', ['b'], 0, c.epoch);
  c.drop('a');
  assert.is(c.get('k', 1), 'new');
  c.drop('b');
  assert.is(c.get('k', 1), undefined);
});

test('null drops everything; a revocation of an unknown kind of key drops everything too', () => {
  const { c, put } = tokens();
  put('t1', who(1), far, 0);
  c.drop(null);
  assert.is(c.size, 0);
  put('t1', who(1), far, 0);
  c.drop(revokedTag('something-else'));
  assert.is(c.size, 0);
  assert.is(revokedTag(userKey('u1')), 'user:u1');
  assert.is(revokedTag(null), null);
});

test('a read that began before a drop is not cached (it may predate the change)', () => {
  const { c, put } = tokens();
  const epoch = c.epoch;
  c.drop(sessionKey('s9'));
  put('t1', who(1), far, 0, epoch);
  assert.is(c.get('t1', 1), undefined);
  put('t1', who(1), far, 0);
  assert.ok(c.get('t1', 1));
});

test.run();
