import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../config/load.js';
import { DockerSandbox } from '../../plugins/sandbox-docker/docker-sandbox.js';
import { testDocker } from '../helpers/docker.js';
import { sandboxEscapes } from './sandbox-escapes.js';
import { sandboxContract } from './sandbox.js';

const config = loadConfig(process.env, {});
const docker = testDocker();
const up = await Promise.race([
  docker.ping().then(() => true),
  new Promise<boolean>((r) => setTimeout(() => r(false), 5000)),
]).catch(() => false);

const fresh = async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hoist-sbx-docker-'));
  const sandbox = new DockerSandbox(docker, {
    image: config.dockerBaseImage,
    dockerHost: config.dockerHost,
    runtime: config.dockerRuntime,
    denyCidrs: [],
    serveCpuMillis: config.releaseCpuMillis,
    warn: (m) => console.log(`! ${m}`),
  });
  await sandbox.prepare();
  return {
    sandbox,
    dataDir,
    workspace: (name: string) => {
      const dir = join(dataDir, 'work', name);
      mkdirSync(dir, { recursive: true });
      return dir;
    },
    cleanup: async () => {
      await sandbox.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
};

if (!up) console.log(`! skip: sandbox-docker contract: no Docker engine answers at ${config.dockerHost}`);
else {
  sandboxContract('sandbox-docker', fresh);
  sandboxEscapes('sandbox-docker', fresh);
}
