import Docker from 'dockerode';
import type { Logger } from 'pino';
import type { PluginDefinition } from '../../core/plugin.js';
import { ARCHIVE } from '../../core/ports/archive.js';
import { DEPLOYER, type Deployer } from '../../core/ports/deployer.js';
import { STORAGE } from '../../core/ports/storage.js';
import { ENTITY_MANAGER, LOGGER } from '../../core/tokens.js';
import { dockerConnection } from '../shared/docker/connection.js';
import { parseCidrs } from '../shared/docker/firewall.js';
import { DockerDeployer } from './docker-deployer.js';

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
      processes: config.releaseProcesses,
      diskMb: config.releaseDiskMb,
      runtime: config.dockerRuntime,
      denyCidrs: parseCidrs(config.sandboxDenyCidrs),
      healthTimeoutMs: config.healthTimeoutSeconds * 1000,
      warn: (message) => get<Logger>(LOGGER).warn(message),
    }),
} satisfies PluginDefinition<Deployer>;
