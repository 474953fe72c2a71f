import { definePlugin, PLUGIN_API_VERSION } from '../../core/plugin.js';
import { MemoryChangeFeed } from './memory-change-feed.js';

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'changes-memory',
  port: 'changes',
  name: 'memory',
  deps: {},
  create: () => new MemoryChangeFeed(),
});
