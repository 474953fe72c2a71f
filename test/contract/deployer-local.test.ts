import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { DEPLOYER, type Deployer } from '../../core/ports/deployer.js';
import { STORAGE } from '../../core/ports/storage.js';
import type { Lifecycle } from '../../core/plugin.js';
import deployerLocal from '../../plugins/deployer-local/index.js';
import { resolvedDeps, testKernel } from '../helpers/kernel.js';
import { deployerContract } from './deployer.js';

deployerContract('deployer-local', async () => {
  const kernel = await testKernel({ deployer: 'local', healthTimeoutSeconds: 4 });
  let current = kernel.get(DEPLOYER);
  const release = (id: string) => join(kernel.config.dataDir, 'releases', id);
  return {
    deployer: current,
    storage: kernel.get(STORAGE),
    async restart() {
      // A restart ends every release process; a new instance starts with none running.
      await (current as Deployer & Lifecycle).stop?.();
      current = await deployerLocal.create(resolvedDeps(kernel, deployerLocal.deps));
      return current;
    },
    spoil: (spec) => rm(join(release(spec.deploymentId), 'server.js')),
    leftovers: async (id) =>
      [id, `${id}.variants.pack`, `${id}.variants`, `${id}.index.json`]
        .filter((p) => existsSync(release(p)))
        .map((p) => `releases/${p}`),
    async cleanup() {
      await (current as Deployer & Lifecycle).stop?.();
      await kernel.stop();
    },
  };
});
