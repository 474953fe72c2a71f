import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HoistError } from '../../../core/errors.js';
import { applyBuildSettings, validateBuildSettings } from '../../../core/projects/build-settings.js';

function refused(patch: Record<string, unknown>): string {
  try {
    validateBuildSettings(patch);
  } catch (err) {
    assert.instance(err, HoistError);
    assert.is((err as HoistError).code, 'invalid_request');
    return (err as HoistError).details.field as string;
  }
  throw new Error(`accepted ${JSON.stringify(patch)}`);
}

test('accepts relative directories, bounded commands, semver ranges and known values', () => {
  const ok = {
    root_directory: './apps/web',
    output_directory: 'dist',
    install_command: 'npm ci',
    build_command: 'npm run build && npm test',
    start_command: 'node server.js',
    node_version: '^20.11.0 || >=22',
    framework: 'nextjs',
    runtime: 'node',
  };
  assert.equal(validateBuildSettings(ok), ok);
  for (const v of ['20', '20.x', 'v18.17.1', '>=18 <23', '18 - 20', '~20.1', '22.*'])
    assert.equal(validateBuildSettings({ node_version: v }), { node_version: v });
  assert.equal(validateBuildSettings({ root_directory: '.' }), { root_directory: '.' });
  assert.equal(validateBuildSettings({ framework: null, runtime: null }), { framework: null, runtime: null });
});

test('refuses each bad value naming its field', () => {
  assert.is(refused({ root_directory: '../x' }), 'root_directory');
  assert.is(refused({ root_directory: 'a\\..\\b' }), 'root_directory');
  assert.is(refused({ root_directory: '/abs' }), 'root_directory');
  assert.is(refused({ output_directory: 'D:/out' }), 'output_directory');
  assert.is(refused({ output_directory: 'x'.repeat(256) }), 'output_directory');
  assert.is(refused({ build_command: ' ' }), 'build_command');
  assert.is(refused({ install_command: 'a'.repeat(1001) }), 'install_command');
  assert.is(refused({ start_command: 'a\u0000b' }), 'start_command');
  assert.is(refused({ node_version: 'latest' }), 'node_version');
  assert.is(refused({ node_version: '20 && rm' }), 'node_version');
  assert.is(refused({ framework: 'rails' }), 'framework');
  assert.is(refused({ runtime: 'python' }), 'runtime');
  assert.is(refused({ runtime: 3 }), 'runtime');
  assert.is(refused({ shell: 'bash' }), 'shell');
});

test('applying a patch: a string sets, null clears, absent keys stay', () => {
  assert.equal(
    applyBuildSettings(
      { build_command: 'make', runtime: 'node' },
      { build_command: null, framework: 'vite', runtime: undefined },
    ),
    {
      runtime: 'node',
      framework: 'vite',
    },
  );
});

test.run();
