import { CONFIG, definePlugin, PLUGIN_API_VERSION } from '../../core/plugin.js';
import { SANDBOX } from '../../core/ports/sandbox.js';
import { NodeBuilder } from './node-builder.js';

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'builder-node',
  port: 'builder',
  name: 'node',
  deps: { config: CONFIG, sandbox: SANDBOX },
  create: ({ config, sandbox }) => new NodeBuilder(config, sandbox),
});
