import { BUILDERS, type Builder } from '../../core/ports/builder.js';
import type { PluginDefinition } from '../../core/plugin.js';
import { NodeBuilder } from './node-builder.js';

export default {
  id: 'builder-node',
  port: 'builder',
  name: 'node',
  token: BUILDERS,
  create: ({ config }) => new NodeBuilder(config),
} satisfies PluginDefinition<Builder>;
