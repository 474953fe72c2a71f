import Docker from 'dockerode';
import type { Logger } from 'pino';
import type { PluginDefinition } from '../../core/plugin.js';
import { SANDBOX, type Sandbox } from '../../core/ports/sandbox.js';
import { LOGGER } from '../../core/tokens.js';
import { dockerConnection } from '../shared/docker/connection.js';
import { parseCidrs } from '../shared/docker/firewall.js';
import { DockerSandbox } from './docker-sandbox.js';

export default {
  id: 'sandbox-docker',
  port: 'sandbox',
  name: 'docker',
  token: SANDBOX,
  create: ({ config, get }) => {
    const log = get<Logger>(LOGGER);
    return new DockerSandbox(new Docker(dockerConnection(config.dockerHost)), {
      image: config.dockerBaseImage,
      dockerHost: config.dockerHost,
      runtime: config.dockerRuntime,
      denyCidrs: parseCidrs(config.sandboxDenyCidrs),
      npmRegistry: config.npmRegistry,
      serveCpuMillis: config.releaseCpuMillis,
      warn: (message) => log.warn(message),
    });
  },
} satisfies PluginDefinition<Sandbox>;
