import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEPLOYER, type Deployer } from '../../../core/ports/deployer.js';
import { startGarbageCollection } from '../../../adapters/worker/garbage-collection.js';
import { BuildCaches } from '../../../core/deployments/build-cache.js';
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

test('a round removes the build caches no build gave back for buildCacheDays; a recent one stays', async () => {
  const kernel = await testKernel({ deployer: 'local', buildCacheDays: 2 });
  try {
    const root = join(kernel.config.dataDir, 'build-cache');
    const caches = new BuildCaches(kernel.config.dataDir, 1024 * 1024);
    for (const account of ['idle-account', 'busy-account']) {
      const into = join(kernel.config.dataDir, `${account}-build`);
      await caches.take(account, into);
      writeFileSync(join(into, 'downloads'), 'x');
      assert.is((await caches.giveBack(account, into)).kept, true);
    }
    const old = new Date(Date.now() - 3 * 86_400_000);
    utimesSync(join(root, 'idle-account'), old, old);
    const stop = startGarbageCollection(kernel, 60_000);
    for (let i = 0; i < 100 && existsSync(join(root, 'idle-account')); i++) await new Promise((r) => setTimeout(r, 20));
    await stop();
    assert.equal(readdirSync(root), ['busy-account'], 'the one unused for 3 days is gone');
    // A build that gives its cache back makes it recent again.
    const into = join(kernel.config.dataDir, 'again');
    await caches.take('busy-account', into);
    utimesSync(into, old, old);
    await caches.giveBack('busy-account', into);
    assert.ok(Date.now() - statSync(join(root, 'busy-account')).mtimeMs < 60_000);
  } finally {
    await kernel.stop();
  }
});

test.run();
