import type { AbstractSqlConnection } from '@mikro-orm/knex';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../config/load.js';
import { boot, KernelError } from '../../adapters/kernel.js';
import { createLogger } from '../../adapters/logger.js';
import { withWorkspace } from '../../core/deployments/workspace.js';
import { STORAGE, type Storage } from '../../core/ports/storage.js';
import { RateHit } from '../../core/entities/rate-hit.js';

// The modes below are what Hoist sets, whatever the umask it was started with.
process.umask(0o022);
const root = mkdtempSync(join(tmpdir(), 'hoist-datadir-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

const modeOf = (path: string) => (statSync(path).mode & 0o7777).toString(8);
// The embedded defaults whatever the environment names: the SQLite file and local storage are what is checked.
const start = (dataDir: string) =>
  boot(
    loadConfig({}, { dataDir, db: 'sqlite', storage: 'local', queue: 'local', deployer: 'local', logLevel: 'silent' }),
    { log: createLogger('silent') },
  );

test(
  'a fresh data directory is 0711, its directories 0700 (work/, releases/ and ' +
    'sandbox/ 0711) and every secret file 0600',
  async () => {
    const dataDir = join(root, 'fresh', 'hoist');
    const k = await start(dataDir);
    try {
      // A write, so SQLite has its -wal and -shm files; an object in storage; a workspace.
      await k.orm.em.fork().insert(RateHit, Object.assign(new RateHit(), { key: 'modes', at: new Date() }));
      await k.get<Storage>(STORAGE).put('uploads/modes.zip', Readable.from([Buffer.from('zip')]));
      const inside = await withWorkspace(dataDir, 'modes', async (dir) => ({
        work: modeOf(join(dataDir, 'work')),
        dir: modeOf(await dir()),
      }));
      assert.equal(inside, { work: '711', dir: '711' }, 'the workspace and work/ let the sandbox uid through');

      assert.is(modeOf(dataDir), '711');
      for (const file of ['hoist.sqlite', 'hoist.sqlite-wal', 'hoist.sqlite-shm', 'jwt.key', 'master-keys.json']) {
        assert.ok(existsSync(join(dataDir, file)), `${file} exists`);
        assert.is(modeOf(join(dataDir, file)), '600', file);
      }
      assert.is(modeOf(join(dataDir, 'storage')), '700');
      assert.is(modeOf(join(dataDir, 'storage', 'uploads')), '700');
      assert.is(modeOf(join(dataDir, 'storage', 'uploads', 'modes.zip')), '600');
    } finally {
      await k.stop();
    }
    // Every entry, at the next start, is one of the modes the design allows.
    const k2 = await start(dataDir);
    await k2.stop();
    for (const name of readdirSync(dataDir)) {
      const want = statSync(join(dataDir, name)).isDirectory()
        ? ['work', 'releases', 'sandbox'].includes(name)
          ? '711'
          : '700'
        : '600';
      assert.is(modeOf(join(dataDir, name)), want, name);
    }
  },
);

test('each SQLite connection: WAL, synchronous=normal (or full when set), a busy wait; bad values fail', async () => {
  const modes: Record<string, unknown> = {};
  for (const sqliteSynchronous of [undefined, 'full']) {
    const dataDir = join(root, `sync-${sqliteSynchronous ?? 'default'}`);
    const k = await boot(
      loadConfig(
        {},
        { dataDir, db: 'sqlite', logLevel: 'silent', ...(sqliteSynchronous ? { sqliteSynchronous } : {}) },
      ),
      { log: createLogger('silent') },
    );
    try {
      const conn = k.orm.em.getConnection() as AbstractSqlConnection;
      const read = async () => {
        const [journal] = await conn.execute<{ journal_mode: string }[]>('pragma journal_mode');
        const [sync] = await conn.execute<{ synchronous: number }[]>('pragma synchronous');
        const [busy] = await conn.execute<{ timeout: number }[]>('pragma busy_timeout');
        return [journal.journal_mode, sync.synchronous, busy.timeout];
      };
      const first = await read();
      // The libsql dialect replaces a connection older than 10 s: the next one must be set up the same.
      const pool = conn.getKnex().client;
      const old = await pool.acquireConnection();
      old.__created = 0;
      await pool.releaseConnection(old);
      const replaced = await read();
      const now = await pool.acquireConnection();
      await pool.releaseConnection(now);
      assert.is.not(now, old);
      assert.equal(replaced, first);
      modes[sqliteSynchronous ?? 'default'] = first;
    } finally {
      await k.stop();
    }
  }
  // SQLite's numbers: 1 is NORMAL, 2 is FULL.
  assert.equal(modes, { default: ['wal', 1, 5000], full: ['wal', 2, 5000] });
  assert.throws(() => loadConfig({ HOIST_SQLITE_SYNCHRONOUS: 'off' }, { dataDir: root }), /HOIST_SQLITE_SYNCHRONOUS/);
});

test('an existing data directory with loose modes is corrected at start', async () => {
  const dataDir = join(root, 'loose');
  // A first start makes the key files and the database; then everything is opened up, as a copy or an old version may
  // leave it.
  await (await start(dataDir)).stop();
  mkdirSync(join(dataDir, 'storage', 'uploads'), { recursive: true });
  for (const dir of ['work', 'releases', 'cache', 'pulumi']) mkdirSync(join(dataDir, dir), { recursive: true });
  writeFileSync(join(dataDir, 'notes.txt'), 'anything else in it\n');
  chmodSync(dataDir, 0o755);
  for (const file of ['hoist.sqlite', 'jwt.key', 'master-keys.json', 'notes.txt'])
    chmodSync(join(dataDir, file), 0o644);
  for (const dir of ['storage', 'cache', 'pulumi']) chmodSync(join(dataDir, dir), 0o755);
  chmodSync(join(dataDir, 'work'), 0o777);
  chmodSync(join(dataDir, 'releases'), 0o700);
  // A symlink is left alone (chmod would change what it points at).
  const outside = join(root, 'outside.txt');
  writeFileSync(outside, "not Hoist's\n");
  chmodSync(outside, 0o644);
  symlinkSync(outside, join(dataDir, 'link'));

  const k = await start(dataDir);
  await k.stop();
  assert.is(modeOf(dataDir), '711');
  for (const file of ['hoist.sqlite', 'jwt.key', 'master-keys.json', 'notes.txt'])
    assert.is(modeOf(join(dataDir, file)), '600', file);
  for (const dir of ['storage', 'cache', 'pulumi']) assert.is(modeOf(join(dataDir, dir)), '700', dir);
  for (const dir of ['work', 'releases']) assert.is(modeOf(join(dataDir, dir)), '711', dir);
  assert.is(modeOf(outside), '644');
});

test('a data directory whose mode cannot be set stops start-up, naming it', async () => {
  // A directory of another process: not even root may change its mode.
  if (process.platform !== 'linux') return console.log('skip: needs /proc (Linux)');
  try {
    await start('/proc/1');
    assert.unreachable('booted');
  } catch (err) {
    assert.instance(err, KernelError);
    assert.match((err as Error).message, 'data directory /proc/1 (dataDir)');
    assert.match((err as Error).message, 'cannot set the mode of /proc/1 to 711');
  }
});

test.run();
