import { definePlugin, PLUGIN_API_VERSION } from '../../core/plugin.js';
import { NodeAnalyzer } from './node-analyzer.js';

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'analyzer-node',
  port: 'analyzer',
  name: 'node',
  deps: {},
  create: () => new NodeAnalyzer(),
});
