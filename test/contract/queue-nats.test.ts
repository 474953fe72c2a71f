import { test } from 'uvu';
import { natsQueueFixture } from '../helpers/nats.js';
import { queueContract } from './queue.js';

queueContract('queue-nats', () => natsQueueFixture({ ackWaitMs: 1500, maxDeliveries: 3 }));

test.run();
