import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { boot } from '../../../adapters/kernel.js';
import { createLogger } from '../../../adapters/logger.js';
import { loadConfig } from '../../../config/load.js';
import { onPath } from '../../../plugins/deployer-pulumi/index.js';

test('without the pulumi CLI on PATH, start-up fails naming the plugin id and the way out', async () => {
  if (await onPath('pulumi')) {
    console.log('! the pulumi CLI is on PATH here: the start-up failure is not exercised');
    return;
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'hoist-pulumi-'));
  try {
    const config = loadConfig({}, { dataDir, deployer: 'pulumi', logLevel: 'silent' });
    const err = await boot(config, { log: createLogger('silent') }).then(
      () => null,
      (e: Error) => e,
    );
    assert.ok(err, 'boot fails');
    assert.match(err!.message, 'deployer-pulumi');
    assert.match(err!.message, 'pulumi CLI');
    assert.match(err!.message, 'deployer=docker');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('onPath finds an executable on PATH and nothing elsewhere', async () => {
  assert.ok(await onPath('node', process.env.PATH));
  assert.is(await onPath('node', '/nonexistent-dir'), null);
  assert.is(await onPath('sh', '/bin'), '/bin/sh');
});

test.run();
