import { CONFIG, definePlugin, LOGGER, PLUGIN_API_VERSION } from '../../core/plugin.js';
import { ARCHIVE } from '../../core/ports/archive.js';
import { SANDBOX } from '../../core/ports/sandbox.js';
import { STORAGE } from '../../core/ports/storage.js';
import { WORKSPACES } from '../../core/ports/workspaces.js';
import { LocalDeployer } from './local-deployer.js';

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'deployer-local',
  port: 'deployer',
  name: 'local',
  deps: { workspaces: WORKSPACES, storage: STORAGE, archive: ARCHIVE, sandbox: SANDBOX, config: CONFIG, log: LOGGER },
  create: ({ workspaces, storage, archive, sandbox, config, log }) =>
    new LocalDeployer(workspaces, storage, archive, sandbox, {
      dataDir: config.dataDir,
      memoryMb: config.releaseMemoryMb,
      processes: config.releaseProcesses,
      diskMb: config.releaseDiskMb,
      healthTimeoutMs: config.healthTimeoutSeconds * 1000,
      log,
    }),
});
