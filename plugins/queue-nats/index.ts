import type { PluginDefinition } from '../../core/plugin.js';
import { QUEUE, type Queue } from '../../core/ports/queue.js';
import { LOGGER } from '../../core/tokens.js';
import type { Logger } from 'pino';
import { NatsQueue } from './nats-queue.js';

export default {
  id: 'queue-nats',
  port: 'queue',
  name: 'nats',
  token: QUEUE,
  create: ({ get, config }) => {
    const log = get<Logger>(LOGGER);
    return new NatsQueue({
      url: config.natsUrl,
      stream: config.natsStream,
      consumer: config.natsConsumer,
      ackWaitMs: config.queueVisibilitySeconds * 1000,
      maxDeliveries: config.queueMaxDeliveries,
      warn: (obj, msg) => log.warn(obj, msg),
    });
  },
} satisfies PluginDefinition<Queue>;
