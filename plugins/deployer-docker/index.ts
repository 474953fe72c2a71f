import { CONFIG, definePlugin, LOGGER, PLUGIN_API_VERSION } from '../../core/plugin.js';
import { ARCHIVE } from '../../core/ports/archive.js';
import { STORAGE } from '../../core/ports/storage.js';
import { WORKSPACES } from '../../core/ports/workspaces.js';
import { dockerClient } from '../shared/docker/connection.js';
import { releaseOptions } from '../shared/docker/release-options.js';

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'deployer-docker',
  port: 'deployer',
  name: 'docker',
  deps: { workspaces: WORKSPACES, storage: STORAGE, archive: ARCHIVE, config: CONFIG, log: LOGGER },
  async create({ workspaces, storage, archive, config, log }) {
    // Loaded only when chosen, with dockerode: a start on the embedded defaults stays fast.
    const { DockerDeployer } = await import('./docker-deployer.js');
    const docker = await dockerClient(config.dockerHost);
    return new DockerDeployer(workspaces, storage, archive, docker, releaseOptions(config, log));
  },
});
