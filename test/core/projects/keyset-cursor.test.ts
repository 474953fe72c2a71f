import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HoistError } from '../../../core/errors.js';
import { decodeCursor, encodeCursor } from '../../../core/projects/keyset-cursor.js';

test('a cursor round-trips and is opaque base64url', () => {
  const k = { createdAt: new Date('2026-01-02T03:04:05.678Z'), id: '0f8fad5b-d9cb-469f-a165-70867728950e' };
  const c = encodeCursor(k);
  assert.match(c, /^[A-Za-z0-9_-]+$/);
  assert.equal(decodeCursor(c), k);
});

test('anything else is invalid_request on field cursor', () => {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  for (const c of [
    '',
    'garbage',
    b64({}),
    b64(['2026-01-02T03:04:05.678Z']),
    b64(['nope', '0f8fad5b-d9cb-469f-a165-70867728950e']),
    b64(['2026-01-02T03:04:05.678Z', 'x']),
  ]) {
    try {
      decodeCursor(c);
      assert.unreachable(c);
    } catch (err) {
      assert.instance(err, HoistError);
      assert.equal([(err as HoistError).code, (err as HoistError).details.field], ['invalid_request', 'cursor']);
    }
  }
});

test.run();
