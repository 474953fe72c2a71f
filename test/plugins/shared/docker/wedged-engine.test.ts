import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import Docker from 'dockerode';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../../../config/load.js';
import { StageError } from '../../../../core/errors.js';
import { ARCHIVE } from '../../../../core/ports/archive.js';
import type { ReleaseSpec } from '../../../../core/ports/deployer.js';
import { SandboxError } from '../../../../core/ports/sandbox.js';
import { STORAGE } from '../../../../core/ports/storage.js';
import { WORKSPACES } from '../../../../core/ports/workspaces.js';
import { CONFIG, type Logger } from '../../../../core/plugin.js';
import { DockerDeployer } from '../../../../plugins/deployer-docker/docker-deployer.js';
import { LABEL } from '../../../../plugins/sandbox-docker/box.js';
import { DockerSandbox } from '../../../../plugins/sandbox-docker/docker-sandbox.js';
import { dockerConnection, withDeadlines } from '../../../../plugins/shared/docker/connection.js';
import { releaseOptions } from '../../../../plugins/shared/docker/release-options.js';
import { dockerLeftovers, dockerMissing, testDocker } from '../../../helpers/docker.js';
import { EngineProxy } from '../../../helpers/engine-proxy.js';
import { testKernel } from '../../../helpers/kernel.js';
import { zipOf } from '../../../helpers/live.js';

// A Docker engine that stops answering (a wedged dockerd) fails the stage, naming the call, within the call's
// deadline; what could not be removed then goes once the engine answers again. The engine is the real one behind a
// proxy (helpers/engine-proxy.ts) that swallows requests when told; the deadlines are short here (1 s, 2 s).
const config = loadConfig(process.env, {});
const engine = dockerConnection(config.dockerHost).socketPath;
const missing = engine ? await dockerMissing() : `HOIST_DOCKER_HOST ${config.dockerHost} is not a unix socket`;
const deadlines = { callMs: 1000, transferMs: 2000 };

/** Resolves what `p` rejects with, and how long it took, ms. */
async function failure(p: Promise<unknown>): Promise<{ err: Error; ms: number }> {
  const began = Date.now();
  const err = await p.then(
    () => assert.unreachable('it resolved'),
    (e: Error) => e,
  );
  return { err: err as Error, ms: Date.now() - began };
}

if (missing) console.log(`! skip: a wedged Docker engine: ${missing}`);
else {
  const proxy = await EngineProxy.start(engine);
  const docker = () => withDeadlines(new Docker({ socketPath: proxy.path }), deadlines);
  const kernel = await testKernel();
  const warnings: string[] = [];
  const log = { warn: (m: string) => warnings.push(m) } as unknown as Logger;
  const deployer = new DockerDeployer(
    kernel.get(WORKSPACES),
    kernel.get(STORAGE),
    kernel.get(ARCHIVE),
    docker(),
    releaseOptions(kernel.get(CONFIG), log),
  );
  await deployer.start();
  const made: string[] = [];
  const release = async (): Promise<ReleaseSpec> => {
    const deploymentId = randomUUID();
    const artifactKey = `artifacts/${deploymentId}.zip`;
    await kernel.get(STORAGE).put(artifactKey, Readable.from([await zipOf({ 'index.html': '<h1>wedged</h1>' })]));
    made.push(deploymentId);
    const slug = `s-${deploymentId.slice(0, 8)}`;
    return {
      deploymentId,
      accountId: randomUUID(),
      projectId: randomUUID(),
      slug,
      runtime: 'static',
      artifactKey,
      startCommand: null,
      env: {},
    };
  };
  const control = () => ({
    signal: new AbortController().signal,
    log: () => {},
    report: { targetChanged: async () => {}, exited: async () => {}, failed: async () => {} },
  });

  test.before.each(() => {
    proxy.forward();
    proxy.swallowed.length = 0;
    warnings.length = 0;
  });
  test.after(async () => {
    proxy.forward();
    for (const id of made) await deployer.remove(id).catch(() => {});
    await deployer.stop();
    await kernel.stop();
    await proxy.close();
  });

  test('a deploy on an engine that answers nothing fails with deploy_docker_failed naming the call', async () => {
    const spec = await release();
    proxy.blackHole();
    const { err, ms } = await failure(deployer.prepare(spec, control()));
    assert.instance(err, StageError);
    assert.is((err as StageError).code, 'deploy_docker_failed');
    assert.match(err.message, /the Docker engine did not answer `GET \/containers\/json` within 1 s/);
    // The first call's deadline, then the cleanup's: about 2 s; far below the default deadlines (a hang fails too).
    assert.ok(ms < 20_000, `it took ${ms} ms`);
    assert.ok(
      warnings.some((w) => w.includes(`release ${spec.deploymentId} was not removed`)),
      JSON.stringify(warnings),
    );
    // Once the engine answers again, the release's remove (a retry's, the project's deletion) takes what is left.
    proxy.forward();
    await deployer.remove(spec.deploymentId);
    assert.equal(await dockerLeftovers(spec.deploymentId), []);
  });

  test('an engine that wedges at a commit fails the deploy after the transfer deadline', async () => {
    const spec = await release();
    proxy.blackHole(/^POST \/commit\?/);
    const { err, ms } = await failure(deployer.prepare(spec, control()));
    assert.ok(proxy.swallowed[0]?.includes(`tag=${spec.deploymentId}`), JSON.stringify(proxy.swallowed));
    assert.is((err as StageError).code, 'deploy_docker_failed');
    assert.match(err.message, /the Docker engine did not answer `POST \/commit` within 2 s/);
    // The commit's deadline, then the packing container's removal and the cleanup's: about 4 s.
    assert.ok(ms >= 2000 && ms < 20_000, `it took ${ms} ms`);
    assert.ok(
      warnings.some((w) => w.includes(`release ${spec.deploymentId} was not removed`)),
      JSON.stringify(warnings),
    );
    // The packing container (no release labels) is left; the release's next remove takes it too.
    proxy.forward();
    const packing = testDocker().getContainer(`hoist-packing-${spec.deploymentId}`);
    assert.is((await packing.inspect()).Name, `/hoist-packing-${spec.deploymentId}`);
    await deployer.remove(spec.deploymentId);
    assert.is(await packing.inspect().catch((e: { statusCode?: number }) => e.statusCode), 404);
    assert.equal(await dockerLeftovers(spec.deploymentId), []);
  });

  test('the engine answering again, the same deployer deploys as before', async () => {
    const spec = await release();
    // Deadlines of a real engine for this deploy (read at each call): a container's start alone takes 0.5 s on an
    // idle machine here, and past 1 s under load.
    const short = { ...deadlines };
    Object.assign(deadlines, { callMs: 30_000, transferMs: 60_000 });
    try {
      // Rethrown plain: uvu cannot show a StageError's details (an object), and ends the file without a word.
      const target = await deployer.prepare(spec, control()).catch((err: StageError) => {
        throw new Error(`${err.code}: ${err.message}`);
      });
      assert.is(target.kind, 'http');
      await deployer.remove(spec.deploymentId);
    } finally {
      Object.assign(deadlines, short);
    }
    assert.equal(await dockerLeftovers(spec.deploymentId), []);
  });

  /**
   * Runs `command` in a sandbox on the proxy, the engine wedging when `wedge` says (at once, or on a line the command
   * prints); asserts the run fails with a SandboxError whose message matches `message` within `withinMs`, and that,
   * the engine answering again, the sandbox's stop leaves nothing of it.
   */
  const wedgedRun = async (command: string, wedge: (line?: string) => boolean, message: RegExp, withinMs: number) => {
    const sandbox = new DockerSandbox(docker(), {
      image: config.dockerBaseImage,
      dockerHost: proxy.path,
      runtime: config.dockerRuntime,
      denyCidrs: [],
      serveCpuMillis: 500,
      warn: (m) => warnings.push(m),
    });
    await sandbox.prepare();
    const workspace = mkdtempSync(join(tmpdir(), 'hoist-wedged-'));
    writeFileSync(join(workspace, 'in.txt'), 'in');
    try {
      if (wedge()) proxy.blackHole();
      const limits = { timeMs: 1500, memoryMb: 128, processes: 32, outputBytes: 1 << 20, diskMb: 16 };
      const log = (line: string) => void (wedge(line) && proxy.blackHole());
      const { err, ms } = await failure(sandbox.run({ command, workspace, env: {}, network: 'none', limits, log }));
      assert.instance(err, SandboxError);
      assert.match(err.message, message);
      assert.ok(ms < withinMs, `it took ${ms} ms`);
      assert.ok(
        warnings.some((w) => w.includes('of a run were not removed')),
        JSON.stringify(warnings),
      );
    } finally {
      // Once the engine answers again, the sandbox's stop removes what the run left.
      proxy.forward();
      await sandbox.stop();
      rmSync(workspace, { recursive: true, force: true });
    }
    const real = testDocker();
    const label = [`${LABEL.owner}=${sandbox.owner}`];
    assert.equal(await real.listContainers({ all: true, filters: { label } }), []);
    assert.equal((await real.listVolumes({ filters: { label } })).Volumes ?? [], []);
  };

  test('a sandbox run on an engine that answers nothing fails with a SandboxError naming the call', async () => {
    await wedgedRun('true', (line) => line === undefined, /did not answer `POST \/volumes\/create` within 1 s/, 20_000);
  });

  test('a run whose engine wedges while it runs fails once its time limit is up and the kill unanswered', async () => {
    // The time limit (1.5 s), then the kill's deadline (1 s), then the cleanup's.
    const kill = /did not answer `POST \/containers\/[0-9a-f]{12}\/kill` within 1 s/;
    await wedgedRun('echo running; sleep 60', (line) => line === 'running', kill, 20_000);
  });
}

test.run();
