import { BUILDERS, type Builder } from '../../core/ports/builder.js';
import type { PluginDefinition } from '../../core/plugin.js';
import { SANDBOX, type Sandbox } from '../../core/ports/sandbox.js';
import { NodeBuilder } from './node-builder.js';

export default {
  id: 'builder-node',
  port: 'builder',
  name: 'node',
  token: BUILDERS,
  create: ({ config, get }) => new NodeBuilder(config, get<Sandbox>(SANDBOX)),
} satisfies PluginDefinition<Builder>;
