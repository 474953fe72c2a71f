// deployer-pulumi's runningReleases and logs read the Docker engine its stacks run containers on (no pulumi CLI
// needed).
import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../../config/load.js';
import type { Archive } from '../../../core/ports/archive.js';
import type { Storage } from '../../../core/ports/storage.js';
import type { Workspaces } from '../../../core/ports/workspaces.js';
import { PulumiDeployer, type PulumiDeployerOptions } from '../../../plugins/deployer-pulumi/pulumi-deployer.js';
import { releaseContainerName, releaseLabels } from '../../../plugins/shared/docker/release-image.js';
import { dockerMissing, removeDockerProjects, testDocker } from '../../helpers/docker.js';

const missing = await dockerMissing();

/** A deployer for what uses the engine alone (runningReleases, logs): what only prepare and remove use is not here. */
const engineOnly = (docker: ReturnType<typeof testDocker>) =>
  new PulumiDeployer({} as Workspaces, {} as Storage, {} as Archive, docker, {} as PulumiDeployerOptions);

test('runningReleases names the running labelled release containers, each once; not a stopped one', async () => {
  if (missing) return console.log(`! skipped: ${missing}`);
  const docker = testDocker();
  const projectId = randomUUID();
  const [running, stopped] = [randomUUID(), randomUUID()];
  const deployer = engineOnly(docker);
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

test("logs reads a release container's own log: timed lines, pieces joined, long ones cut; else null", async () => {
  if (missing) return console.log(`! skipped: ${missing}`);
  const docker = testDocker();
  const image = loadConfig(process.env, {}).dockerBaseImage;
  const projectId = randomUUID();
  const [node, site, stranger] = [randomUUID(), randomUUID(), randomUUID()];
  const deployer = engineOnly(docker);
  // What the app prints: an empty line, a line of 40,000 bytes (the engine keeps it in three 16 KiB pieces, each
  // with the time: one line all the same), a CRLF, stderr, and a last line without its newline.
  const app = [
    "console.log('app started');",
    "console.log('');",
    "console.log('é'.repeat(20000));",
    "process.stdout.write('windows line\\r\\n');",
    // The engine reads stdout and stderr apart: a moment between them keeps their order.
    "setTimeout(() => console.error('on stderr'), 100);",
    "setTimeout(() => process.stdout.write('no newline'), 200);",
  ].join(' ');
  const begun = Date.now() - 1000;
  try {
    const container = await docker.createContainer({
      name: releaseContainerName(node),
      Image: image,
      Cmd: ['node', '-e', app],
      Labels: releaseLabels({ deploymentId: node, projectId }),
    });
    await container.start();
    await container.wait();
    // A static release's container runs Hoist's static server (never started here: the base image has no /hoist).
    await docker.createContainer({
      name: releaseContainerName(site),
      Image: image,
      Cmd: ['node', '/hoist/entry.cjs', 'static'],
      Labels: releaseLabels({ deploymentId: site, projectId }),
    });
    // A container of that name that is not the release's (its label names another deployment).
    await docker.createContainer({
      name: releaseContainerName(stranger),
      Image: image,
      Cmd: ['node', '-e', "console.log('not a release')"],
      Labels: releaseLabels({ deploymentId: randomUUID(), projectId }),
    });

    const lines = await deployer.logs(node, 50);
    assert.ok(lines, 'lines are kept');
    assert.equal(
      lines.map((l) => l.text),
      ['app started', '', `${'é'.repeat(2000)}…`, 'windows line', 'on stderr', 'no newline'],
    );
    for (const { at } of lines) {
      assert.match(at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.ok(Date.parse(at) >= begun && Date.parse(at) <= Date.now(), at);
    }
    assert.equal(
      lines.map((l) => l.at),
      [...lines.map((l) => l.at)].sort(),
      'oldest first',
    );
    assert.equal(await deployer.logs(node, 1), [lines.at(-1)]);
    assert.equal(await deployer.logs(node, 2), lines.slice(-2));
    assert.equal(await deployer.logs(node, 5000), lines, 'at most 1,000: all of these');

    assert.is(await deployer.logs(site, 10), null, 'a static release has no log');
    assert.is(await deployer.logs(stranger, 10), null, 'not the release of that id');
    assert.is(await deployer.logs(randomUUID(), 10), null, 'no container');
    assert.is(await deployer.logs('no-such-release', 10), null);
    assert.is(await deployer.logs('../containers/json', 10), null, 'not an id');
    assert.is(await deployer.logs('x'.repeat(65), 10), null, 'not an id');
  } finally {
    await removeDockerProjects([projectId]);
  }
  assert.is(await deployer.logs(node, 10), null, 'gone with its container');
});

test.run();
