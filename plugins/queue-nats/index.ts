import { CONFIG, definePlugin, LOGGER, PLUGIN_API_VERSION } from '../../core/plugin.js';

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'queue-nats',
  port: 'queue',
  name: 'nats',
  deps: { config: CONFIG, log: LOGGER },
  async create({ config, log }) {
    // Loaded only when chosen, with the nats client: a start on the embedded defaults stays fast.
    const { NatsQueue } = await import('./nats-queue.js');
    return new NatsQueue({
      url: config.natsUrl,
      stream: config.natsStream,
      consumer: config.natsConsumer,
      ackWaitMs: config.queueVisibilitySeconds * 1000,
      maxDeliveries: config.queueMaxDeliveries,
      warn: (obj, msg) => log.warn(obj, msg),
    });
  },
});
