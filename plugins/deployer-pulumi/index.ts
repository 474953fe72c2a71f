import { access, constants } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { CONFIG, definePlugin, LOGGER, PLUGIN_API_VERSION } from '../../core/plugin.js';
import { ARCHIVE } from '../../core/ports/archive.js';
import { STORAGE } from '../../core/ports/storage.js';
import { WORKSPACES } from '../../core/ports/workspaces.js';
import { releaseOptions } from '../shared/docker/release-options.js';
import { dockerClient } from '../shared/docker/connection.js';

const ID = 'deployer-pulumi';

/** The path of an executable `name` on PATH, or null. */
export async function onPath(name: string, path = process.env.PATH ?? ''): Promise<string | null> {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    const candidate = join(dir, name);
    if (
      await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return candidate;
  }
  return null;
}

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: ID,
  port: 'deployer',
  name: 'pulumi',
  deps: { workspaces: WORKSPACES, storage: STORAGE, archive: ARCHIVE, config: CONFIG, log: LOGGER },
  async create({ workspaces, storage, archive, config, log }) {
    if (!(await onPath('pulumi'))) {
      throw new Error(
        `${ID} needs the pulumi CLI on PATH (and its Docker provider plugin: pulumi plugin install resource ` +
          'docker); it was not found. Install them, or use deployer=docker, which talks to the Docker ' +
          'Engine API directly.',
      );
    }
    // Loaded only when chosen: the Pulumi SDK is large.
    const { PulumiDeployer } = await import('./pulumi-deployer.js');
    return new PulumiDeployer(workspaces, storage, archive, await dockerClient(config.dockerHost), {
      ...releaseOptions(config, log),
      dataDir: config.dataDir,
      dockerHost: config.dockerHost,
      passphrase: config.pulumiPassphrase ?? '',
    });
  },
});
