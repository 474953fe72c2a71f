import { CONFIG, definePlugin, ENTITY_MANAGER, PLUGIN_API_VERSION } from '../../core/plugin.js';
import { JobRowSchema } from './job.js';
import { LocalQueue } from './local-queue.js';

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'queue-local',
  port: 'queue',
  name: 'local',
  deps: { em: ENTITY_MANAGER, config: CONFIG },
  entities: [JobRowSchema],
  create: ({ em, config }) =>
    new LocalQueue(em, {
      visibilityMs: config.queueVisibilitySeconds * 1000,
      maxDeliveries: config.queueMaxDeliveries,
      pollMs: 1000,
    }),
});
