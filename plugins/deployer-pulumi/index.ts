import { access, constants } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import Docker from 'dockerode';
import type { Logger } from 'pino';
import type { PluginDefinition } from '../../core/plugin.js';
import { ARCHIVE } from '../../core/ports/archive.js';
import { DEPLOYER, type Deployer } from '../../core/ports/deployer.js';
import { STORAGE } from '../../core/ports/storage.js';
import { ENTITY_MANAGER, LOGGER } from '../../core/tokens.js';
import { parseCidrs } from '../shared/docker/firewall.js';
import { dockerConnection } from '../shared/docker/connection.js';

const ID = 'deployer-pulumi';

/** The path of an executable `name` on PATH, or null. */
export async function onPath(name: string, path = process.env.PATH ?? ''): Promise<string | null> {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    const candidate = join(dir, name);
    if (await access(candidate, constants.X_OK).then(() => true, () => false)) return candidate;
  }
  return null;
}

export default {
  id: ID,
  port: 'deployer',
  name: 'pulumi',
  token: DEPLOYER,
  async create({ config, get }) {
    if (!(await onPath('pulumi'))) {
      throw new Error(
        `${ID} needs the pulumi CLI on PATH (and its Docker provider plugin: pulumi plugin install resource docker); it was not found. Install them, or use deployer=docker, which talks to the Docker Engine API directly.`,
      );
    }
    // Loaded only when chosen: the Pulumi SDK is large.
    const { PulumiDeployer } = await import('./pulumi-deployer.js');
    return new PulumiDeployer(get(ENTITY_MANAGER), get(STORAGE), get(ARCHIVE), new Docker(dockerConnection(config.dockerHost)), {
      dataDir: config.dataDir,
      dockerHost: config.dockerHost,
      baseImage: config.dockerBaseImage,
      network: config.dockerNetwork,
      memoryMb: config.releaseMemoryMb,
      cpuMillis: config.releaseCpuMillis,
      processes: config.releaseProcesses,
      diskMb: config.releaseDiskMb,
      runtime: config.dockerRuntime,
      denyCidrs: parseCidrs(config.sandboxDenyCidrs),
      healthTimeoutMs: config.healthTimeoutSeconds * 1000,
      passphrase: config.pulumiPassphrase ?? '',
      warn: (message: string) => get<Logger>(LOGGER).warn(message),
    });
  },
} satisfies PluginDefinition<Deployer>;
