import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isTerminal, pollUntilTerminal } from '../../client/poll.js';

type Op = { status: string; progress: number; current_stage?: string | null };

/** A `get` that answers the given views in turn and counts the calls. */
function views(list: Op[]) {
  let calls = 0;
  return { get: async () => list[Math.min(calls++, list.length - 1)], calls: () => calls };
}

test('terminal statuses are succeeded, failed and canceled', () => {
  for (const s of ['succeeded', 'failed', 'canceled']) assert.ok(isTerminal(s));
  for (const s of ['queued', 'running', undefined]) assert.not.ok(isTerminal(s));
});

for (const end of ['succeeded', 'failed', 'canceled']) {
  test(`polling stops at the first ${end} answer and returns it`, async () => {
    const v = views([
      { status: 'running', progress: 5 },
      { status: 'running', progress: 40 },
      { status: end, progress: 70 },
      { status: 'running', progress: 99 },
    ]);
    const seen: Op[] = [];
    const op = await pollUntilTerminal(v.get, { sleep: async () => {}, onUpdate: (o) => seen.push(o) });
    assert.is(op.status, end);
    assert.is(v.calls(), 3);
    assert.equal(
      seen.map((o) => o.progress),
      [5, 40, 70],
    );
  });
}

test(
  'the delay grows while nothing changes, is bounded, is jittered, and falls back ' + 'when something moves',
  async () => {
    const same = { status: 'running', progress: 20 };
    const v = views([
      ...Array(8).fill(same),
      { status: 'running', progress: 30 },
      { status: 'succeeded', progress: 100 },
    ]);
    const waits: number[] = [];
    await pollUntilTerminal(v.get, {
      minMs: 100,
      maxMs: 400,
      random: () => 0.5,
      sleep: async (ms) => void waits.push(ms),
    });
    assert.equal(waits, [100, 150, 225, 338, 400, 400, 400, 400, 100]);
    const jittered: number[] = [];
    await pollUntilTerminal(views([same, same, { status: 'failed', progress: 20 }]).get, {
      minMs: 100,
      random: () => 0,
      sleep: async (ms) => void jittered.push(ms),
    });
    assert.equal(jittered, [80, 120]);
  },
);

test('an aborted signal stops polling', async () => {
  const ac = new AbortController();
  const v = views([{ status: 'running', progress: 5 }]);
  const done = pollUntilTerminal(v.get, { signal: ac.signal, sleep: async () => ac.abort(new Error('stop')) });
  assert.is((await done.catch((e) => e)).message, 'stop');
  assert.is(v.calls(), 1);
});

test.run();
