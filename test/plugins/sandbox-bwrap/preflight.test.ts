import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startWorker } from '../../../adapters/worker/worker.js';
import { boot } from '../../../adapters/kernel.js';
import { plugins } from '../../../adapters/plugins.js';
import { loadConfig } from '../../../config/load.js';
import type { PluginDefinition } from '../../../core/plugin.js';
import { SANDBOX, SandboxError, type Sandbox } from '../../../core/ports/sandbox.js';
import { preflight, TOOLS } from '../../../plugins/sandbox-bwrap/preflight.js';

test('a missing tool is named with the Debian package that brings it and the other choice', async () => {
  const tools: [string, string][] = TOOLS.map(([path, pkg]) => (pkg === 'bubblewrap' || pkg === 'slirp4netns' ? [`/nonexistent${path}`, pkg] : [path, pkg]));
  const err = await preflight(tools).then(() => null, (e: Error) => e);
  assert.instance(err, SandboxError);
  assert.match(err!.message, 'apt-get install bubblewrap slirp4netns');
  assert.match(err!.message, 'HOIST_SANDBOX=docker');
});

test('the tools this machine has pass', async () => {
  await preflight();
});

test('a worker whose sandbox cannot run stops at start with the sandbox\'s message, before it takes work', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hoist-preflight-'));
  const broken: PluginDefinition<Sandbox> = {
    id: 'sandbox-broken',
    port: 'sandbox',
    name: 'broken',
    token: SANDBOX,
    create: () => ({
      id: 'sandbox-broken',
      prepare: async () => {
        throw new SandboxError('sandbox broken needs frobnicate: apt-get install frobnicate');
      },
      run: async () => Promise.reject(new Error('never')),
      serve: async () => Promise.reject(new Error('never')),
    }),
  };
  const kernel = await boot(loadConfig({}, { dataDir, sandbox: 'broken' as never, logLevel: 'silent' }), { plugins: [...plugins, broken] });
  try {
    const err = await startWorker(kernel).then(() => null, (e: Error) => e);
    assert.match(err?.message ?? '', 'apt-get install frobnicate');
  } finally {
    await kernel.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test.run();
