import { CONFIG, definePlugin, LOGGER, PLUGIN_API_VERSION } from '../../core/plugin.js';
import { dockerClient } from '../shared/docker/connection.js';
import { parseCidrs } from '../shared/docker/firewall.js';

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'sandbox-docker',
  port: 'sandbox',
  name: 'docker',
  deps: { config: CONFIG, log: LOGGER },
  async create({ config, log }) {
    // Loaded only when chosen, with dockerode: a start on the embedded defaults stays fast.
    const { DockerSandbox } = await import('./docker-sandbox.js');
    return new DockerSandbox(await dockerClient(config.dockerHost), {
      image: config.dockerBaseImage,
      dockerHost: config.dockerHost,
      runtime: config.dockerRuntime,
      denyCidrs: parseCidrs(config.sandboxDenyCidrs),
      npmRegistry: config.npmRegistry,
      serveCpuMillis: config.releaseCpuMillis,
      warn: (message) => log.warn(message),
    });
  },
});
