import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../../../config/load.js';
import { startContainer } from '../../../../plugins/shared/docker/connection.js';
import { dockerMissing, testDocker } from '../../../helpers/docker.js';

const missing = await dockerMissing();
if (missing) console.log(`! skip: startContainer: ${missing}`);
else {
  const docker = testDocker();
  const name = `hoist-test-start-${process.pid}`;
  test.after(async () => {
    await docker
      .getContainer(name)
      .remove({ force: true })
      .catch(() => {});
  });

  test('a container the engine finds running already counts as started; any other refusal is thrown', async () => {
    const container = await docker.createContainer({
      name,
      Image: loadConfig(process.env, {}).dockerBaseImage,
      Entrypoint: ['node', '-e', 'setTimeout(() => {}, 60000)'],
      Cmd: [],
      HostConfig: { NetworkMode: 'none' },
    });
    await startContainer(container);
    // The engine answers a second start 304, which dockerode rejects.
    const again = await container.start().catch((err: unknown) => err);
    assert.instance(again, Error, 'the engine refuses a second start');
    await startContainer(container);
    assert.is((await container.inspect()).State.Running, true);

    await container.remove({ force: true });
    const gone = await startContainer(container).catch((err: unknown) => err);
    assert.instance(gone, Error, 'a container that is gone is not started');
    assert.is((gone as { statusCode?: number }).statusCode, 404);
  });
}

test.run();
