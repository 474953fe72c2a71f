import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { afterCheck, type DomainFacts, type Findings } from '../../../core/domains/domain-states.js';

const now = new Date('2026-01-01T00:00:00Z');
const schedule = { checkSeconds: 60, maxSeconds: 3600, activeSeconds: 1800 };
const fresh: DomainFacts = {
  hostname: 'app.customer.test',
  status: 'pending',
  token: 'tok',
  target: 'shop.apps.test',
  failures: 0,
  verifiedAt: null,
  activatedAt: null,
};
const found = (txt: string[], cname: string[]): Findings => ({ ok: true, txt, cname });
const step = (d: DomainFacts, f: Findings) => ({ ...d, ...afterCheck(d, f, now, schedule) });
const wait = (o: { nextCheckAt: Date }) => (o.nextCheckAt.getTime() - now.getTime()) / 1000;

test('pending until the TXT record holds the token, verified until the CNAME points home, then active', () => {
  let d = step(fresh, found([], []));
  assert.is(d.status, 'pending');
  d = step(d, found(['tok'], ['elsewhere.test']));
  assert.is(d.status, 'verified');
  assert.equal(d.verifiedAt, now);
  d = step(d, found(['tok'], ['shop.apps.test']));
  assert.is(d.status, 'active');
  assert.is(d.message, null);
  assert.is(wait(d), 1800);
});

test('both records at the first check: active at once', () => {
  assert.is(step(fresh, found(['x', 'tok'], ['shop.apps.test'])).status, 'active');
});

test('a domain once verified or active whose records go is misconfigured, and active again when they are back', () => {
  const active = step(fresh, found(['tok'], ['shop.apps.test']));
  for (const f of [found([], ['shop.apps.test']), found(['tok'], []), found(['other'], ['x.test'])]) {
    const bad = step(active, f);
    assert.is(bad.status, 'misconfigured');
    assert.ok(bad.message);
    assert.is(wait(bad), 60, 'a fresh problem is checked again soon');
    assert.is(step(bad, found(['tok'], ['shop.apps.test'])).status, 'active');
  }
  const verified = step(fresh, found(['tok'], []));
  assert.is(step(verified, found([], [])).status, 'misconfigured', 'a verified domain losing its TXT record');
});

test('checks back off while nothing changes, up to the cap; a change starts over', () => {
  let d: DomainFacts = fresh;
  const waits: number[] = [];
  for (let i = 0; i < 10; i++) {
    const o = afterCheck(d, found([], []), now, schedule);
    waits.push(wait(o));
    d = { ...d, ...o };
  }
  assert.equal(waits, [120, 240, 480, 960, 1920, 3600, 3600, 3600, 3600, 3600]);
  assert.is(wait(afterCheck(d, found(['tok'], []), now, schedule)), 60);
});

test('a failed lookup keeps the state and backs off, never past the active period', () => {
  const active = step(fresh, found(['tok'], ['shop.apps.test']));
  let d: DomainFacts = active;
  const waits: number[] = [];
  for (let i = 0; i < 7; i++) {
    const o = afterCheck(d, { ok: false, reason: 'timeout' }, now, schedule);
    assert.is(o.status, 'active');
    assert.match(o.message!, /timeout/);
    assert.equal(o.activatedAt, now);
    waits.push(wait(o));
    d = { ...d, ...o };
  }
  assert.equal(waits, [60, 120, 240, 480, 960, 1800, 1800]);
  assert.is(afterCheck(fresh, { ok: false, reason: 'servfail' }, now, schedule).status, 'pending');
});

test(
  "a claim whose token shares the TXT record with the holder's fails; alone in it, " +
    'the claim goes on as if the name were free',
  () => {
    const held = {
      ...fresh,
      ...afterCheck(fresh, found(['holder-token', 'tok'], ['shop.apps.test']), now, schedule, 'holder-token'),
    };
    assert.is(held.status, 'failed');
    assert.match(held.message!, /held by another project whose token is in the TXT record/);
    assert.is(held.verifiedAt, null, "not verified: the name is not this domain's");
    const taken = afterCheck(held, found(['tok'], ['shop.apps.test']), now, schedule, 'holder-token');
    assert.is(taken.status, 'active');
    assert.is(afterCheck(fresh, found(['tok'], []), now, schedule, 'holder-token').status, 'verified');
    assert.is(
      afterCheck(fresh, found(['holder-token'], []), now, schedule, 'holder-token').status,
      'pending',
      'a pending claim without its token just waits',
    );
  },
);

test(
  'a failed domain stays failed until the TXT record holds its token, and keeps its ' + 'state when a lookup fails',
  () => {
    const failed: DomainFacts = { ...fresh, status: 'failed', verifiedAt: now, activatedAt: now };
    const still = afterCheck(failed, found(['other'], ['shop.apps.test']), now, schedule);
    assert.is(still.status, 'failed');
    assert.match(still.message!, /lost app\.customer\.test to another project/);
    assert.is(afterCheck(failed, { ok: false, reason: 'timeout' }, now, schedule).status, 'failed');
    assert.is(afterCheck(failed, found(['tok'], ['shop.apps.test']), now, schedule).status, 'active');
    assert.is(
      afterCheck(failed, found(['tok'], []), now, schedule).status,
      'misconfigured',
      'back as the holder, with its CNAME still wrong',
    );
  },
);

test.run();
