import Docker from 'dockerode';
import type { PluginDefinition } from '../../core/plugin.js';
import { ARCHIVE } from '../../core/ports/archive.js';
import { DEPLOYER, type Deployer } from '../../core/ports/deployer.js';
import { STORAGE } from '../../core/ports/storage.js';
import { ENTITY_MANAGER } from '../../core/tokens.js';
import { DockerDeployer } from './docker-deployer.js';

/** Connection options of the Docker Engine API at `endpoint`: a unix socket (`unix:///path` or a path) or `tcp://host:port`. */
export function dockerConnection(endpoint: string): Docker.DockerOptions {
  if (endpoint.startsWith('/')) return { socketPath: endpoint };
  const url = new URL(endpoint);
  if (url.protocol === 'unix:') return { socketPath: url.pathname };
  if (url.protocol === 'tcp:' || url.protocol === 'http:') return { host: url.hostname, port: Number(url.port || 2375), protocol: 'http' };
  throw new Error(`dockerHost ${JSON.stringify(endpoint)} is neither unix:///path nor tcp://host:port`);
}

export default {
  id: 'deployer-docker',
  port: 'deployer',
  name: 'docker',
  token: DEPLOYER,
  create: ({ config, get }) =>
    new DockerDeployer(get(ENTITY_MANAGER), get(STORAGE), get(ARCHIVE), new Docker(dockerConnection(config.dockerHost)), {
      dataDir: config.dataDir,
      baseImage: config.dockerBaseImage,
      network: config.dockerNetwork,
      memoryMb: config.releaseMemoryMb,
      cpuMillis: config.releaseCpuMillis,
      healthTimeoutMs: config.healthTimeoutSeconds * 1000,
    }),
} satisfies PluginDefinition<Deployer>;
