import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DEPLOYER, type Deployer } from '../../core/ports/deployer.js';
import { STORAGE, type Storage } from '../../core/ports/storage.js';
import type { Lifecycle } from '../../core/plugin.js';
import deployerLocal from '../../plugins/deployer-local/index.js';
import { testKernel } from '../helpers/kernel.js';
import { deployerContract } from './deployer.js';

deployerContract('deployer-local', async () => {
  const kernel = await testKernel({ deployer: 'local', healthTimeoutSeconds: 4 });
  let current = kernel.get<Deployer>(DEPLOYER);
  return {
    deployer: current,
    storage: kernel.get<Storage>(STORAGE),
    em: kernel.orm.em,
    async restart() {
      // A restart ends every release process; a new instance starts with none running.
      await (current as Deployer & Lifecycle).stop?.();
      current = (await deployerLocal.create({ config: kernel.config, get: kernel.get })) as Deployer;
      return current;
    },
    leftovers: async (id) => (existsSync(join(kernel.config.dataDir, 'releases', id)) ? [`releases/${id}`] : []),
    async cleanup() {
      await (current as Deployer & Lifecycle).stop?.();
      await kernel.stop();
    },
  };
});
