import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SessionCache, sessionKey, userKey } from '../../../core/auth/session-cache.js';

const who = (n: number, user = 'u1') => ({ userId: user, accountId: 'a1', email: 'e@x', sessionId: `s${n}` });
const far = 1e15;

test('a cached token answers until its expiry, and not at or after it', () => {
  const c = new SessionCache(10, 60_000);
  c.put('t1', who(1), 1_500, 1_000, c.epoch);
  assert.equal(c.get('t1', 1_499), who(1));
  assert.is(c.get('t1', 1_500), undefined);
  assert.is(c.size, 0, 'an expired entry is dropped when met');
});

test('no entry outlives the cache bound, whatever the token says', () => {
  const c = new SessionCache(10, 5_000);
  c.put('t1', who(1), far, 1_000, c.epoch);
  assert.ok(c.get('t1', 5_999));
  assert.is(c.get('t1', 6_000), undefined);
});

test('beyond its size, the least recently used token goes first', () => {
  const c = new SessionCache(2, 60_000);
  c.put('t1', who(1), far, 0, c.epoch);
  c.put('t2', who(2), far, 0, c.epoch);
  assert.ok(c.get('t1', 1)); // t2 is now the least recently used
  c.put('t3', who(3), far, 0, c.epoch);
  assert.is(c.size, 2);
  assert.ok(c.get('t1', 1));
  assert.is(c.get('t2', 1), undefined);
  assert.ok(c.get('t3', 1));
});

test('size 0 caches nothing', () => {
  const c = new SessionCache(0, 60_000);
  c.put('t1', who(1), far, 0, c.epoch);
  assert.is(c.get('t1', 1), undefined);
});

test('dropping a session drops its tokens only; dropping a user drops all of theirs', () => {
  const c = new SessionCache(10, 60_000);
  c.put('t1', who(1), far, 0, c.epoch);
  c.put('t1b', who(1), far, 0, c.epoch);
  c.put('t2', who(2), far, 0, c.epoch);
  c.put('t3', who(3, 'u2'), far, 0, c.epoch);
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

test('null (changes may have been missed) or an unknown key drops everything', () => {
  const c = new SessionCache(10, 60_000);
  c.put('t1', who(1), far, 0, c.epoch);
  c.drop(null);
  assert.is(c.size, 0);
  c.put('t1', who(1), far, 0, c.epoch);
  c.drop('something-else');
  assert.is(c.size, 0);
});

test('a lookup that began before a revocation is not cached (the session read may predate it)', () => {
  const c = new SessionCache(10, 60_000);
  const epoch = c.epoch;
  c.drop(sessionKey('s9'));
  c.put('t1', who(1), far, 0, epoch);
  assert.is(c.get('t1', 1), undefined);
  c.put('t1', who(1), far, 0, c.epoch);
  assert.ok(c.get('t1', 1));
});

test.run();
