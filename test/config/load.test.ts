import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes } from 'node:crypto';
import { ConfigError, loadConfig } from '../../config/load.js';
import { generators } from '../../adapters/cli/commands/secrets.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-config-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const throwsNaming = (fn: () => unknown, ...words: string[]) => {
  try {
    fn();
  } catch (err) {
    assert.instance(err, ConfigError);
    for (const w of words) assert.ok((err as Error).message.includes(w), `${(err as Error).message} should name ${w}`);
    return;
  }
  assert.unreachable('no error');
};

test('defaults apply, then the file, then HOIST_* variables', () => {
  const file = join(dir, 'a.json');
  writeFileSync(file, JSON.stringify({ port: 4000, appsDomain: 'apps.example.com' }));
  const c = loadConfig({ HOIST_CONFIG: file, HOIST_PORT: '4100' });
  assert.is(c.port, 4100);
  assert.is(c.appsDomain, 'apps.example.com');
  assert.is(c.db, 'sqlite');
  assert.is(c.edgePort, 8080);
});

test('a bad value names its key', () => {
  throwsNaming(() => loadConfig({ HOIST_PORT: 'abc' }), 'port', 'HOIST_PORT');
  throwsNaming(() => loadConfig({ HOIST_PORT: '70000' }), 'HOIST_PORT', '65535');
  throwsNaming(() => loadConfig({ HOIST_TRUST_PROXY: 'maybe' }), 'HOIST_TRUST_PROXY');
  throwsNaming(() => loadConfig({ HOIST_LOG_LEVEL: 'loud' }), 'HOIST_LOG_LEVEL', 'info');
});

test('an unknown key or a broken file is refused', () => {
  const unknown = join(dir, 'b.json');
  writeFileSync(unknown, JSON.stringify({ prot: 1 }));
  throwsNaming(() => loadConfig({ HOIST_CONFIG: unknown }), 'prot');
  const broken = join(dir, 'c.json');
  writeFileSync(broken, '{ nope');
  throwsNaming(() => loadConfig({ HOIST_CONFIG: broken }), broken);
  throwsNaming(() => loadConfig({ HOIST_CONFIG: join(dir, 'missing.json') }), 'missing.json');
});

const key32 = () => randomBytes(32).toString('base64');

test(
  'a placeholder or too short secret stops start-up, naming the variable and the ' + 'command that makes a good one',
  () => {
    const refused: [Record<string, string>, string, string][] = [
      // What docker-compose.yml shipped.
      [{ HOIST_JWT_SECRET: 'change-me-to-32-or-more-random-bytes!!' }, 'HOIST_JWT_SECRET', 'placeholder'],
      [{ HOIST_MASTER_KEY: 'k1:Y2hhbmdlLW1lLXRvLTMyLXJhbmRvbS1ieXRlcyEhISE=' }, 'HOIST_MASTER_KEY', 'placeholder'],
      // Anything starting with change-me, however long, and other stand-ins.
      [{ HOIST_JWT_SECRET: `Change-Me-${randomBytes(32).toString('hex')}` }, 'HOIST_JWT_SECRET', 'placeholder'],
      [{ HOIST_JWT_SECRET: 'x'.repeat(64) }, 'HOIST_JWT_SECRET', 'placeholder'],
      [
        { HOIST_MASTER_KEY: `k1:${Buffer.from('change-me-to-a-key-of-32-bytes!!').toString('base64')}` },
        'HOIST_MASTER_KEY',
        'placeholder',
      ],
      [{ HOIST_PULUMI_PASSPHRASE: 'change-me-pulumi-passphrase' }, 'HOIST_PULUMI_PASSPHRASE', 'placeholder'],
      [{ HOIST_METRICS_TOKEN: 'changeme-metrics-token-please' }, 'HOIST_METRICS_TOKEN', 'placeholder'],
      // Too short.
      [
        { HOIST_JWT_SECRET: 'a'.repeat(10) + randomBytes(10).toString('hex') },
        'HOIST_JWT_SECRET',
        'at least 32 bytes, got 30',
      ],
      [{ HOIST_PULUMI_PASSPHRASE: 'hunter2hunter' }, 'HOIST_PULUMI_PASSPHRASE', 'at least 16 bytes'],
      [{ HOIST_METRICS_TOKEN: 'tok3n' }, 'HOIST_METRICS_TOKEN', 'at least 16 bytes'],
      // Master keys: 32 bytes each, every entry checked.
      [
        { HOIST_MASTER_KEY: `k1:${randomBytes(16).toString('base64')}` },
        'HOIST_MASTER_KEY',
        'entry 1 must be a key of 32 bytes (base64), got 16',
      ],
      [
        { HOIST_MASTER_KEY: `k2:${key32()},k1:${randomBytes(31).toString('base64')}` },
        'HOIST_MASTER_KEY',
        'entry 2 must be a key of 32 bytes',
      ],
      [{ HOIST_MASTER_KEY: key32() }, 'HOIST_MASTER_KEY', 'entry 1 must be id:base64'],
    ];
    for (const [env, name, why] of refused) {
      try {
        loadConfig(env);
        assert.unreachable(`${JSON.stringify(env)} was accepted`);
      } catch (err) {
        assert.instance(err, ConfigError);
        const message = (err as Error).message;
        assert.match(message, name);
        assert.match(message, why);
        assert.match(message, `generate one with \`npx hoist secrets --env ${name}\``);
        assert.not.match(message, Object.values(env)[0], 'the message never shows the value');
      }
    }
  },
);

test('the secret checks hold for the config file and for values given in code too', () => {
  const file = join(dir, 'secrets.json');
  writeFileSync(file, JSON.stringify({ jwtSecret: 'change-me-to-32-or-more-random-bytes!!' }));
  throwsNaming(() => loadConfig({ HOIST_CONFIG: file }), 'jwtSecret', 'HOIST_JWT_SECRET', 'placeholder');
  throwsNaming(
    () => loadConfig({}, { metricsToken: 'short' }),
    'metricsToken',
    'HOIST_METRICS_TOKEN',
    'at least 16 bytes',
  );
});

test('good secrets load: the ones `hoist secrets` makes, and any random ones long enough', () => {
  const made = Object.fromEntries(Object.entries(generators).map(([name, make]) => [name, make()]));
  const c = loadConfig(made);
  assert.is(c.jwtSecret, made.HOIST_JWT_SECRET);
  assert.is(c.masterKey, made.HOIST_MASTER_KEY);
  assert.is(c.pulumiPassphrase, made.HOIST_PULUMI_PASSPHRASE);
  assert.is(c.metricsToken, made.HOIST_METRICS_TOKEN);
  const two = `k2:${key32()},k1:${randomBytes(32).toString('base64url')}`;
  assert.is(loadConfig({ HOIST_MASTER_KEY: two, HOIST_JWT_SECRET: randomBytes(32).toString('hex') }).masterKey, two);
  // Unset secrets stay unset: Hoist generates its own signing key and key file.
  assert.is(loadConfig({}).jwtSecret, undefined);
});

test.run();
