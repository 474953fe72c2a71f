import Docker from 'dockerode';
import { loadConfig } from '../../config/load.js';
import { dockerConnection } from '../../plugins/shared/docker/connection.js';

/** The Docker engine Hoist is configured to use (HOIST_DOCKER_HOST, else the default socket). */
export function testDocker(): Docker {
  return new Docker(dockerConnection(loadConfig(process.env, {}).dockerHost));
}

/**
 * Null when a Docker engine answers and has the release base image; else why not (tests that need
 * Docker skip then, saying so). `.ci/run` installs and starts one and builds the image.
 */
export async function dockerMissing(): Promise<string | null> {
  const docker = testDocker();
  const image = loadConfig(process.env, {}).dockerBaseImage;
  try {
    await Promise.race([
      docker.ping(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('no answer within 5 s')), 5000).unref()),
    ]);
  } catch (err) {
    return `no Docker engine answers (${(err as Error).message}); start dockerd (.ci/run does)`;
  }
  const found = await docker
    .getImage(image)
    .inspect()
    .then(
      () => true,
      () => false,
    );
  return found ? null : `the Docker engine has no ${image} image; build it with scripts/docker-base-image.sh`;
}

/** Labelled containers and images of one deployment still on the engine, as `container <name>` / `image <tags>`. */
export async function dockerLeftovers(deploymentId: string): Promise<string[]> {
  const docker = testDocker();
  const label = [`hoist.deployment=${deploymentId}`];
  const containers = await docker.listContainers({ all: true, filters: { label } });
  const images = await docker.listImages({ filters: { label } });
  return [
    ...containers.map((c) => `container ${c.Names.join(',')}`),
    ...images.map((i) => `image ${(i.RepoTags ?? []).join(',') || i.Id}`),
  ];
}

/**
 * Removes the labelled containers and images of the given projects (live releases outlive the kernel that made them).
 */
export async function removeDockerProjects(projectIds: string[]): Promise<void> {
  const docker = testDocker();
  for (const id of projectIds) {
    const label = ['hoist.managed=true', `hoist.project=${id}`];
    for (const c of await docker.listContainers({ all: true, filters: { label } }))
      await docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => {});
    for (const i of await docker.listImages({ filters: { label } }))
      await docker
        .getImage(i.Id)
        .remove({ force: true })
        .catch(() => {});
  }
}
