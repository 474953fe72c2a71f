import type { PluginDefinition } from '../../core/plugin.js';
import { QUEUE, type Queue } from '../../core/ports/queue.js';
import { ENTITY_MANAGER } from '../../core/tokens.js';
import { LocalQueue } from './local-queue.js';

export default {
  id: 'queue-local',
  port: 'queue',
  name: 'local',
  token: QUEUE,
  create: ({ get, config }) =>
    new LocalQueue(get(ENTITY_MANAGER), { visibilityMs: config.queueVisibilitySeconds * 1000, maxDeliveries: config.queueMaxDeliveries, pollMs: 1000 }),
} satisfies PluginDefinition<Queue>;
