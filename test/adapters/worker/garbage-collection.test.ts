import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEPLOYER, type Deployer } from '../../../core/ports/deployer.js';
import { startGarbageCollection } from '../../../adapters/worker/garbage-collection.js';
import { testKernel } from '../../helpers/kernel.js';

test('the worker collects garbage at start and then on its period, and stops doing so when stopped', async () => {
  const kernel = await testKernel({ deployer: 'local' });
  try {
    const deployer = kernel.get<Deployer>(DEPLOYER);
    const collect = deployer.collectGarbage!.bind(deployer);
    let rounds = 0;
    deployer.collectGarbage = async () => {
      rounds++;
      if (rounds === 2) throw new Error('a failing round is logged, and the next one still runs');
      return collect();
    };
    const stop = startGarbageCollection(kernel, 20);
    const end = performance.now() + 10_000;
    while (rounds < 4 && performance.now() < end) await new Promise((r) => setTimeout(r, 10));
    await stop();
    assert.ok(rounds >= 4, `${rounds} rounds`);
    const after = rounds;
    await new Promise((r) => setTimeout(r, 100));
    assert.is(rounds, after, 'no round after stop');
  } finally {
    await kernel.stop();
  }
});

test.run();
