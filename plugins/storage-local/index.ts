import { join } from 'node:path';
import { CONFIG, definePlugin, PLUGIN_API_VERSION } from '../../core/plugin.js';
import { LocalStorage } from './local-storage.js';

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'storage-local',
  port: 'storage',
  name: 'local',
  deps: { config: CONFIG },
  create: ({ config }) => new LocalStorage(join(config.dataDir, 'storage')),
});
