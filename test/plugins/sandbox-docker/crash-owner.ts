// A Hoist process that serves one release through sandbox-docker, prints its owner id, and waits to
// be killed (docker-sandbox.test.ts kills it with SIGKILL, as a crash).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../../config/load.js';
import { DockerSandbox } from '../../../plugins/sandbox-docker/docker-sandbox.js';
import { testDocker } from '../../helpers/docker.js';

const config = loadConfig(process.env, {});
const sandbox = new DockerSandbox(testDocker(), {
  image: config.dockerBaseImage,
  dockerHost: config.dockerHost,
  runtime: config.dockerRuntime,
  denyCidrs: [],
  serveCpuMillis: 500,
  warn: () => {},
});
await sandbox.prepare();
await sandbox.serve({
  command: 'node -e "setInterval(() => {}, 1000)"',
  workspace: mkdtempSync(join(tmpdir(), 'hoist-crash-')),
  env: {},
  network: 'none',
  port: 3000,
  limits: { memoryMb: 128, processes: 32, outputBytes: 1 << 20, diskMb: 16 },
  log: () => {},
});
console.log(sandbox.owner);
setInterval(() => {}, 1000);
