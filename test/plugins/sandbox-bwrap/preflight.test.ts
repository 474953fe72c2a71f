import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startWorker } from '../../../adapters/worker/worker.js';
import { boot } from '../../../adapters/kernel.js';
import { plugins } from '../../../adapters/plugins.js';
import { loadConfig } from '../../../config/load.js';
import { definePlugin, PLUGIN_API_VERSION } from '../../../core/plugin.js';
import { SandboxError } from '../../../core/ports/sandbox.js';
import { preflight, TOOLS, TUN_DEVICE } from '../../../plugins/sandbox-bwrap/preflight.js';

test('a missing tool is named with the Debian package that brings it and the other choice', async () => {
  const tools: [string, string][] = TOOLS.map(([path, pkg]) =>
    pkg === 'bubblewrap' || pkg === 'slirp4netns' ? [`/nonexistent${path}`, pkg] : [path, pkg],
  );
  const err = await preflight(tools).then(
    () => null,
    (e: Error) => e,
  );
  assert.instance(err, SandboxError);
  assert.match(err!.message, 'apt-get install bubblewrap slirp4netns');
  assert.match(err!.message, 'HOIST_SANDBOX=docker');
});

test('the tools this machine has pass', async () => {
  await preflight();
});

test("a worker whose sandbox cannot run stops at start with the sandbox's message, before it takes work", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hoist-preflight-'));
  const broken = definePlugin({
    apiVersion: PLUGIN_API_VERSION,
    id: 'sandbox-broken',
    port: 'sandbox',
    name: 'broken',
    deps: {},
    create: () => ({
      id: 'sandbox-broken',
      prepare: async () => {
        throw new SandboxError('sandbox broken needs frobnicate: apt-get install frobnicate');
      },
      run: async () => Promise.reject(new Error('never')),
      serve: async () => Promise.reject(new Error('never')),
    }),
  });
  const kernel = await boot(loadConfig({}, { dataDir, sandbox: 'broken' as never, logLevel: 'silent' }), {
    plugins: [...plugins, broken],
  });
  try {
    const err = await startWorker(kernel).then(
      () => null,
      (e: Error) => e,
    );
    assert.match(err?.message ?? '', 'apt-get install frobnicate');
  } finally {
    await kernel.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a TUN device only root may open, or none, is refused naming the chmod and the other choice', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hoist-tun-'));
  try {
    const device = join(dir, 'tun');
    writeFileSync(device, '');
    for (const [path, mode] of [
      [device, 0o600],
      [device, 0o664],
      [join(dir, 'missing'), null],
    ] as const) {
      if (mode !== null) chmodSync(path, mode);
      const err = await preflight(TOOLS, path).then(
        () => null,
        (e: Error) => e,
      );
      assert.instance(err, SandboxError, `${path} ${mode}`);
      assert.match(err!.message, 'sandbox bwrap needs /dev/net/tun readable and writable by every user');
      assert.match(err!.message, 'chmod 0666 /dev/net/tun');
      assert.match(err!.message, 'HOIST_SANDBOX=docker');
    }
    chmodSync(device, 0o666);
    await preflight(TOOLS, device);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.is(TUN_DEVICE, '/dev/net/tun');
});

test.run();
