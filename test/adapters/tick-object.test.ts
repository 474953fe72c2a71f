import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pinnedTickObject, pinTickObject } from '../../adapters/tick-object.js';

test('pinTickObject keeps one of nextTick’s tick objects alive, the same one however often it is called', async () => {
  pinTickObject();
  await new Promise((r) => process.nextTick(r));
  const pinned = pinnedTickObject() as Record<string | symbol, unknown>;
  // A tick object, as process.nextTick makes them: its async id and trigger id under symbols, its callback and args.
  assert.is(Object.getOwnPropertySymbols(pinned).length, 2);
  assert.type(pinned.callback, 'function');
  assert.ok('args' in pinned);
  pinTickObject();
  await new Promise((r) => process.nextTick(r));
  assert.is(pinnedTickObject(), pinned, 'the same one');
});

test.run();
