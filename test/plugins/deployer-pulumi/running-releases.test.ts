// deployer-pulumi's runningReleases reads the Docker engine its stacks run containers on (no pulumi CLI needed).
import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../../config/load.js';
import type { Archive } from '../../../core/ports/archive.js';
import type { Storage } from '../../../core/ports/storage.js';
import type { Workspaces } from '../../../core/ports/workspaces.js';
import { PulumiDeployer, type PulumiDeployerOptions } from '../../../plugins/deployer-pulumi/pulumi-deployer.js';
import { releaseLabels } from '../../../plugins/shared/docker/release-image.js';
import { dockerMissing, removeDockerProjects, testDocker } from '../../helpers/docker.js';

const missing = await dockerMissing();

test('runningReleases names the running labelled release containers, each once; not a stopped one', async () => {
  if (missing) return console.log(`! skipped: ${missing}`);
  const docker = testDocker();
  const projectId = randomUUID();
  const [running, stopped] = [randomUUID(), randomUUID()];
  // runningReleases uses the engine alone; what only prepare and remove use is not needed here.
  const deployer = new PulumiDeployer(
    {} as Workspaces,
    {} as Storage,
    {} as Archive,
    docker,
    {} as PulumiDeployerOptions,
  );
  const start = async (deploymentId: string) => {
    const container = await docker.createContainer({
      Image: loadConfig(process.env, {}).dockerBaseImage,
      Cmd: ['node', '-e', 'setInterval(() => {}, 1e6)'],
      Labels: releaseLabels({ deploymentId, projectId }),
    });
    await container.start();
    return container;
  };
  try {
    await start(running);
    await (await start(stopped)).stop({ t: 0 });
    const listed = await deployer.runningReleases();
    assert.ok(listed.includes(running), 'the running release is listed');
    assert.not.ok(listed.includes(stopped), 'the stopped one is not');
    assert.is(listed.filter((id) => id === running).length, 1);
  } finally {
    await removeDockerProjects([projectId]);
  }
});

test.run();
