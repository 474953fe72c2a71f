import type { PluginDefinition } from '../../core/plugin.js';
import { ARCHIVE } from '../../core/ports/archive.js';
import { DEPLOYER, type Deployer } from '../../core/ports/deployer.js';
import { SANDBOX, type Sandbox } from '../../core/ports/sandbox.js';
import { STORAGE } from '../../core/ports/storage.js';
import { ENTITY_MANAGER } from '../../core/tokens.js';
import { LocalDeployer } from './local-deployer.js';

export default {
  id: 'deployer-local',
  port: 'deployer',
  name: 'local',
  token: DEPLOYER,
  create: ({ config, get }) =>
    new LocalDeployer(get(ENTITY_MANAGER), get(STORAGE), get(ARCHIVE), get<Sandbox>(SANDBOX), {
      dataDir: config.dataDir,
      memoryMb: config.releaseMemoryMb,
      processes: config.releaseProcesses,
      diskMb: config.releaseDiskMb,
      healthTimeoutMs: config.healthTimeoutSeconds * 1000,
    }),
} satisfies PluginDefinition<Deployer>;
