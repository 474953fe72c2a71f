// legs: db
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, loadConfig } from '../../config/load.js';
import { boot, KernelError } from '../../adapters/kernel.js';
import { createLogger } from '../../adapters/logger.js';
import { plugins } from '../../adapters/plugins.js';
import { definePlugin, PLUGIN_API_VERSION } from '../../core/plugin.js';
import { BUILDERS } from '../../core/ports/builder.js';
import { testKernel } from '../helpers/kernel.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-kernel-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const failsWith = async (env: Record<string, string>, ...words: string[]) => {
  try {
    const k = await boot(loadConfig({ HOIST_DATA_DIR: dir, ...env }), { log: createLogger('silent') });
    await k.stop();
  } catch (err) {
    assert.instance(err, KernelError);
    for (const w of words) assert.ok((err as Error).message.includes(w), `${(err as Error).message} should name ${w}`);
    return;
  }
  assert.unreachable('booted');
};

test('an unknown plugin id fails start-up naming the port, the id and the choices', async () => {
  await failsWith({ HOIST_STORAGE: 's4' }, 'storage', '"s4"', 'local');
  await failsWith({ HOIST_QUEUE: 'kafka' }, 'queue', '"kafka"');
  await failsWith({ HOIST_DB: 'oracle' }, 'oracle');
});

test('a misconfigured plugin fails start-up naming the plugin id and the key', async () => {
  await failsWith({ HOIST_MAILER: 'smtp' }, 'mailer-smtp', 'HOIST_SMTP_URL');
  await failsWith({ HOIST_DB: 'postgres' }, 'postgres', 'HOIST_DATABASE_URL');
});

test('a good secret starts; a placeholder one never gets as far as booting', async () => {
  const secrets = {
    jwtSecret: randomBytes(48).toString('base64url'),
    masterKey: `k1:${randomBytes(32).toString('base64')}`,
    metricsToken: randomBytes(24).toString('hex'),
  };
  const k = await testKernel(secrets);
  assert.is(k.config.jwtSecret, secrets.jwtSecret);
  await k.stop();
  assert.throws(
    () => loadConfig({ HOIST_DATA_DIR: dir, HOIST_JWT_SECRET: 'change-me-to-32-or-more-random-bytes!!' }),
    (err: Error) => err instanceof ConfigError && /HOIST_JWT_SECRET/.test(err.message),
  );
});

test('boot runs migrations, start hooks, and stop closes the database', async () => {
  const k = await testKernel();
  const rows = await k.orm.em.fork().getConnection().execute('select count(*) as n from projects');
  assert.is(Number(rows[0].n), 0);
  await k.stop();
  let closed = false;
  await k.orm.em
    .fork()
    .getConnection()
    .execute('select 1')
    .catch(() => (closed = true));
  assert.ok(closed || !(await k.orm.isConnected()));
});

test('plugins start after what they depend on, whatever their order, and stop in reverse', async () => {
  const events: string[] = [];
  const hooks = (name: string) => ({
    start: async () => void events.push(`${name} start`),
    stop: async () => void events.push(`${name} stop`),
  });
  const analyzer = definePlugin({
    apiVersion: PLUGIN_API_VERSION,
    id: 'analyzer-recorder',
    port: 'analyzer',
    name: 'recorder',
    deps: { builders: BUILDERS },
    create: () => ({
      id: 'analyzer-recorder',
      priority: -1,
      detect: async () => null,
      ...hooks('analyzer'),
    }),
  });
  const builder = definePlugin({
    apiVersion: PLUGIN_API_VERSION,
    id: 'builder-recorder',
    port: 'builder',
    name: 'recorder',
    deps: {},
    create: () => ({
      id: 'builder-recorder',
      supports: () => false,
      build: () => Promise.reject(new Error('never')),
      ...hooks('builder'),
    }),
  });
  const k = await boot(loadConfig({ HOIST_DATA_DIR: dir }), {
    plugins: [analyzer, ...plugins, builder],
    log: createLogger('silent'),
  });
  assert.equal(events, ['builder start', 'analyzer start']);
  await k.stop();
  assert.equal(events, ['builder start', 'analyzer start', 'analyzer stop', 'builder stop']);
});

test('changes: auto follows the database; postgres without a database URL, and an unknown feed, refused', async () => {
  const { CHANGE_FEED } = await import('../../core/ports/change-feed.js');
  const { MemoryChangeFeed } = await import('../../plugins/changes-memory/memory-change-feed.js');
  const { PostgresChangeFeed } = await import('../../plugins/changes-postgres/postgres-change-feed.js');
  const k = await testKernel();
  try {
    const feed = k.get(CHANGE_FEED);
    assert.instance(feed, k.config.db === 'postgres' ? PostgresChangeFeed : MemoryChangeFeed);
  } finally {
    await k.stop();
  }
  await failsWith({ HOIST_CHANGES: 'postgres' }, 'changes-postgres', 'HOIST_DATABASE_URL');
  assert.throws(
    () => loadConfig({ HOIST_CHANGES: 'nats' }),
    (err: Error) => {
      return err instanceof ConfigError && /changes|HOIST_CHANGES/.test(err.message) && /postgres/.test(err.message);
    },
  );
});

test.run();
