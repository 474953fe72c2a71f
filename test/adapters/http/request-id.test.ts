import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { requestId } from '../../../adapters/http/request-id.js';

test('request ids are req_ and 12 random bytes in base64url, all different across pool refills', () => {
  const ids = new Set<string>();
  for (let i = 0; i < 5000; i++) {
    const id = requestId();
    assert.match(id, /^req_[A-Za-z0-9_-]{16}$/);
    ids.add(id);
  }
  assert.is(ids.size, 5000);
});

test.run();
