import { DEPLOYER, type Deployer } from '../../core/ports/deployer.js';
import { STORAGE } from '../../core/ports/storage.js';
import deployerDocker from '../../plugins/deployer-docker/index.js';
import { dockerLeftovers, dockerMissing, testDocker } from '../helpers/docker.js';
import { resolvedDeps, testKernel } from '../helpers/kernel.js';
import { deployerContract } from './deployer.js';

const missing = await dockerMissing();
if (missing) console.log(`! deployer-docker contract skipped: ${missing}`);
else
  deployerContract('deployer-docker', async () => {
    const kernel = await testKernel({ deployer: 'docker', healthTimeoutSeconds: 5 });
    const made = new Set<string>();
    const storage = kernel.get(STORAGE);
    let current = kernel.get(DEPLOYER);
    // Remember every release the suite prepares, to stop its container on restart.
    const track = (d: Deployer): Deployer => ({
      prepare: (spec, control) => (made.add(spec.deploymentId), d.prepare(spec, control)),
      remove: (id) => d.remove(id),
      restore: (specs, report) => d.restore(specs, report),
      runningReleases: () => d.runningReleases!(),
    });
    return {
      deployer: track(current),
      storage,
      async restart() {
        // As after a reboot of the Docker host: the containers are stopped, not removed.
        const docker = testDocker();
        for (const id of made) {
          for (const c of await docker.listContainers({ filters: { label: [`hoist.deployment=${id}`] } }))
            await docker.getContainer(c.Id).stop({ t: 1 });
        }
        current = await deployerDocker.create(resolvedDeps(kernel, deployerDocker.deps));
        return track(current);
      },
      async spoil(spec) {
        // Container, image and artifact gone: nothing to start, nothing to build again from.
        await current.remove(spec.deploymentId);
        await storage.delete(spec.artifactKey);
      },
      leftovers: dockerLeftovers,
      cleanup: () => kernel.stop(),
    };
  });
