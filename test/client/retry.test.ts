import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HoistNetworkError } from '../../client/errors.js';
import { backoffMs, isSafeToRepeat, retryAfterMs, retryDelay, type RetryPolicy } from '../../client/retry-policy.js';
import { sendWithRetries } from '../../client/retrying-fetch.js';

const policy: RetryPolicy = { attempts: 4, baseMs: 100, maxMs: 1000 };
const noWait = async () => {};

test('only reads and writes with an Idempotency-Key are safe to repeat', () => {
  assert.ok(isSafeToRepeat('GET', new Headers()));
  assert.ok(isSafeToRepeat('head', new Headers()));
  assert.not.ok(isSafeToRepeat('POST', new Headers()));
  assert.not.ok(isSafeToRepeat('DELETE', new Headers()));
  assert.ok(isSafeToRepeat('POST', new Headers({ 'Idempotency-Key': 'k' })));
});

test('backoff is exponential, jittered between 0 and the bound, and never past maxMs', () => {
  assert.is(
    backoffMs(0, policy, () => 0.999),
    99,
  );
  assert.is(
    backoffMs(3, policy, () => 0.5),
    400,
  );
  assert.is(
    backoffMs(10, policy, () => 0.999),
    999,
  );
  assert.is(
    backoffMs(2, policy, () => 0),
    0,
  );
});

test('Retry-After: seconds, an HTTP date, or nothing usable', () => {
  assert.is(retryAfterMs('3'), 3000);
  assert.is(retryAfterMs(new Date(10_000).toUTCString(), 4_000), 6000);
  assert.is(retryAfterMs('soon'), null);
  assert.is(retryAfterMs(null), null);
});

test('retry decisions: which outcomes, for which requests, how many times', () => {
  const r = () => 0.5;
  assert.is(retryDelay({ networkError: true }, 0, true, policy, r), 50);
  for (const status of [429, 502, 503, 504]) assert.is(retryDelay({ status }, 1, true, policy, r), 100, String(status));
  for (const status of [400, 401, 403, 404, 409, 413, 422, 500])
    assert.is(retryDelay({ status }, 0, true, policy, r), null, String(status));
  assert.is(retryDelay({ networkError: true }, 0, false, policy, r), null, 'an unsafe write is never repeated');
  assert.is(retryDelay({ status: 503 }, 0, false, policy, r), null);
  assert.is(retryDelay({ status: 503 }, 3, true, policy, r), null, 'the fourth attempt was the last');
  assert.is(retryDelay({ status: 429, retryAfter: '0' }, 0, true, policy, r), 0, 'Retry-After wins over backoff');
  assert.is(retryDelay({ status: 429, retryAfter: '3600' }, 0, true, policy, r), 1000, 'but is bounded by maxMs');
});

// A real server answering with the statuses of `script` in turn (then 200), counting requests and their keys.
async function server(script: { status: number; headers?: Record<string, string> }[]) {
  const seen: { method: string; key: string | undefined; body: string }[] = [];
  const s = http.createServer((req, res) => {
    let body = '';
    req
      .on('data', (c) => (body += c))
      .on('end', () => {
        seen.push({ method: req.method!, key: req.headers['idempotency-key'] as string | undefined, body });
        const next = script[seen.length - 1] ?? { status: 200 };
        res
          .writeHead(next.status, { 'content-type': 'application/json', ...next.headers })
          .end(JSON.stringify({ n: seen.length }));
      });
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}/x`;
  return { url, seen, close: () => new Promise((r) => s.close(r)) };
}

test(
  'a GET is repeated through 503, 429 (Retry-After) and 502 until it gets its ' + "answer; the delays are the policy's",
  async () => {
    const s = await server([{ status: 503 }, { status: 429, headers: { 'retry-after': '0' } }, { status: 502 }]);
    const waits: number[] = [];
    try {
      const res = await sendWithRetries(() => new Request(s.url), {
        policy,
        sleep: async (ms) => void waits.push(ms),
        random: () => 0.5,
      });
      assert.is(res.status, 200);
      assert.equal(await res.json(), { n: 4 });
      assert.equal(waits, [50, 0, 200]);
    } finally {
      await s.close();
    }
  },
);

test('a POST without an Idempotency-Key is sent once, whatever it gets', async () => {
  const s = await server([{ status: 503 }]);
  try {
    const res = await sendWithRetries(() => new Request(s.url, { method: 'POST', body: 'once' }), {
      policy,
      sleep: noWait,
    });
    assert.is(res.status, 503);
    assert.is(s.seen.length, 1);
  } finally {
    await s.close();
  }
});

test('a POST with an Idempotency-Key is repeated with the same key and the same body', async () => {
  const s = await server([{ status: 504 }, { status: 502 }]);
  try {
    const res = await sendWithRetries(
      () => new Request(s.url, { method: 'POST', body: 'same', headers: { 'idempotency-key': 'k-1' } }),
      { policy, sleep: noWait },
    );
    assert.is(res.status, 200);
    assert.equal(
      s.seen,
      [1, 2, 3].map(() => ({ method: 'POST', key: 'k-1', body: 'same' })),
    );
  } finally {
    await s.close();
  }
});

test('attempts are bounded: the last error answer is returned', async () => {
  const s = await server(Array(10).fill({ status: 503 }));
  try {
    assert.is((await sendWithRetries(() => new Request(s.url), { policy, sleep: noWait })).status, 503);
    assert.is(s.seen.length, policy.attempts);
  } finally {
    await s.close();
  }
});

test('no answer at all: retried, then a HoistNetworkError naming the URL', async () => {
  const s = await server([]);
  await s.close();
  let tries = 0;
  const err = await sendWithRetries(
    () => {
      tries++;
      return new Request(s.url);
    },
    { policy, sleep: noWait },
  ).catch((e) => e);
  assert.instance(err, HoistNetworkError);
  assert.is(err.url, new URL(s.url).origin);
  assert.match(err.message, new URL(s.url).origin);
  assert.is(tries, policy.attempts);
});

test.run();
