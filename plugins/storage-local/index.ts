import { join } from 'node:path';
import type { PluginDefinition } from '../../core/plugin.js';
import { STORAGE, type Storage } from '../../core/ports/storage.js';
import { LocalStorage } from './local-storage.js';

export default {
  id: 'storage-local',
  port: 'storage',
  name: 'local',
  token: STORAGE,
  create: ({ config }) => new LocalStorage(join(config.dataDir, 'storage')),
} satisfies PluginDefinition<Storage>;
