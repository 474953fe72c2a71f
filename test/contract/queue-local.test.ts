// legs: db
import { test } from 'uvu';
import { LocalQueue } from '../../plugins/queue-local/local-queue.js';
import { testKernel } from '../helpers/kernel.js';
import { queueContract } from './queue.js';

queueContract('queue-local', async () => {
  const kernel = await testKernel();
  const opts = { visibilityMs: 1500, maxDeliveries: 3, pollMs: 100 };
  const queue = new LocalQueue(kernel.orm.em, opts);
  const peer = new LocalQueue(kernel.orm.em, opts);
  return {
    queue,
    peer,
    maxDeliveries: opts.maxDeliveries,
    cleanup: async () => {
      await queue.stop();
      await peer.stop();
      await kernel.stop();
    },
  };
});

test.run();
