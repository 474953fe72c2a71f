import { spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../../config/load.js';
import { hoistBin, root } from '../../helpers/cli.js';

// A placeholder secret in the environment: `hoist secrets` must still work, since it is how to replace it.
const run = (...args: string[]) =>
  spawnSync(process.execPath, [hoistBin, 'secrets', ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, HOIST_JWT_SECRET: 'change-me-to-32-or-more-random-bytes!!' },
  });
const pairs = (out: string, prefix = '') =>
  Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((line) => {
        assert.ok(line.startsWith(prefix), line);
        const rest = line.slice(prefix.length);
        return [rest.slice(0, rest.indexOf('=')), rest.slice(rest.indexOf('=') + 1)];
      }),
  );

test(
  'hoist secrets prints export lines for a shell, --env NAME=value lines for an ' +
    '.env file; the configuration takes both',
  () => {
    const shell = run();
    assert.is(shell.status, 0, shell.stderr);
    const exported = pairs(shell.stdout, 'export ');
    assert.equal(Object.keys(exported), ['HOIST_JWT_SECRET', 'HOIST_MASTER_KEY']);
    const env = run('--env');
    assert.is(env.status, 0, env.stderr);
    const lines = pairs(env.stdout);
    assert.equal(Object.keys(lines), ['HOIST_JWT_SECRET', 'HOIST_MASTER_KEY']);
    assert.is.not(lines.HOIST_JWT_SECRET, exported.HOIST_JWT_SECRET);
    const config = loadConfig(lines);
    assert.is(config.masterKey, lines.HOIST_MASTER_KEY);
  },
);

test('hoist secrets makes the named secrets only; an unknown name is bad usage', () => {
  const named = run('--env', 'HOIST_METRICS_TOKEN', 'HOIST_PULUMI_PASSPHRASE');
  assert.is(named.status, 0, named.stderr);
  const made = pairs(named.stdout);
  assert.equal(Object.keys(made), ['HOIST_METRICS_TOKEN', 'HOIST_PULUMI_PASSPHRASE']);
  assert.ok(Buffer.byteLength(made.HOIST_METRICS_TOKEN) >= 32);
  loadConfig(made);
  const bad = run('HOIST_DATABASE_URL');
  assert.is(bad.status, 2);
  assert.is(bad.stdout, '');
  assert.match(
    bad.stderr,
    'Unknown secret HOIST_DATABASE_URL; known: HOIST_JWT_SECRET, HOIST_MASTER_KEY, ' +
      'HOIST_PULUMI_PASSPHRASE, HOIST_METRICS_TOKEN',
  );
});

test.run();
