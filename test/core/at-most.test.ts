import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { atMost } from '../../core/at-most.js';

const tick = () => new Promise((r) => setTimeout(r, 1));

test('every item is handled, never more than the limit at once', async () => {
  let running = 0;
  let most = 0;
  const seen: number[] = [];
  await atMost(3, [1, 2, 3, 4, 5, 6, 7], async (n) => {
    most = Math.max(most, ++running);
    await tick();
    seen.push(n);
    running--;
  });
  assert.equal(
    seen.sort((a, b) => a - b),
    [1, 2, 3, 4, 5, 6, 7],
  );
  assert.is(most, 3);
});

test('the answers come in the order of the items, whatever order the calls end in', async () => {
  const answers = await atMost(2, [30, 1, 20, 2, 10], async (ms) => {
    await new Promise((r) => setTimeout(r, ms));
    return ms * 2;
  });
  assert.equal(answers, [60, 2, 40, 4, 20]);
});

test('a failure rejects once the calls under way ended, and no further item is started', async () => {
  const started: number[] = [];
  let ended = 0;
  const err = await atMost(2, [1, 2, 3, 4, 5], async (n) => {
    started.push(n);
    await tick();
    ended++;
    if (n === 1) throw new Error('first');
  }).catch((e: Error) => e);
  assert.is((err as Error).message, 'first');
  assert.is(ended, started.length);
  assert.ok(!started.includes(5));
});

test('no items: resolves at once', async () => {
  await atMost(4, [], async () => assert.unreachable());
});

test.run();
