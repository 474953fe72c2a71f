import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { RETIREMENT } from '../../../core/deployments/retirement.js';
import { startRetirement } from '../../../adapters/worker/retirement.js';
import { testKernel } from '../../helpers/kernel.js';

test('the worker retires ended releases on its period, not at start (Recovery did), until stopped', async () => {
  const kernel = await testKernel({ deployer: 'local' });
  try {
    const retirement = kernel.get(RETIREMENT);
    const reconcile = retirement.reconcile.bind(retirement);
    let rounds = 0;
    retirement.reconcile = async () => {
      rounds++;
      if (rounds === 2) throw new Error('a failing round is logged, and the next one still runs');
      return reconcile();
    };
    const stop = startRetirement(kernel, 50);
    await new Promise((r) => setTimeout(r, 10));
    assert.is(rounds, 0, 'no round at start');
    const end = performance.now() + 10_000;
    while (rounds < 3 && performance.now() < end) await new Promise((r) => setTimeout(r, 10));
    await stop();
    assert.ok(rounds >= 3, `${rounds} rounds`);
    const after = rounds;
    await new Promise((r) => setTimeout(r, 150));
    assert.is(rounds, after, 'no round after stop');
  } finally {
    await kernel.stop();
  }
});

test.run();
