import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../config/load.js';
import { LocalStorage } from '../../plugins/storage-local/local-storage.js';
import storageLocal from '../../plugins/storage-local/index.js';
import { bytesOf, storageContract } from './storage.js';

/** A LocalStorage on a fresh temp directory, started. */
async function fresh() {
  const root = mkdtempSync(join(tmpdir(), 'hoist-storage-'));
  const storage = new LocalStorage(root);
  await storage.start();
  return {
    root,
    storage,
    cleanup: async () => rmSync(root, { recursive: true, force: true }),
    leftovers: async () => readdirSync(join(root, '.tmp')),
  };
}

storageContract('storage-local', fresh);

test('start sweeps temp files older than an hour and keeps fresh ones', async () => {
  const { root, storage, cleanup } = await fresh();
  const tmp = join(root, '.tmp');
  writeFileSync(join(tmp, 'crashed'), 'partial');
  mkdirSync(join(tmp, 'crashed-dir'));
  writeFileSync(join(root, 'README'), 'not an object: no key names it');
  writeFileSync(join(tmp, 'in-flight'), 'partial');
  const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
  utimesSync(join(tmp, 'crashed'), old, old);
  utimesSync(join(tmp, 'crashed-dir'), old, old);
  // Leftovers are never visible as objects, swept or not.
  const listed = [];
  for await (const o of storage.list('')) listed.push(o.key);
  assert.equal(listed, []);
  await storage.start();
  assert.equal(readdirSync(tmp), ['in-flight']);
  await cleanup();
});

test('no partial object is visible while a slow put runs', async () => {
  const { root, storage, cleanup } = await fresh();
  const src = new Readable({ read() {} });
  src.push(Buffer.alloc(1024 * 1024, 1));
  const put = storage.put('uploads/slow.zip', src);
  // Wait until the bytes are on disk in the temp file.
  const tmpFile = async () => {
    for (let i = 0; i < 200; i++) {
      const [name] = readdirSync(join(root, '.tmp'));
      if (name && statSync(join(root, '.tmp', name)).size === 1024 * 1024) return name;
      await sleep(10);
    }
    throw new Error('the temp file never filled');
  };
  await tmpFile();
  assert.is(await storage.stat('uploads/slow.zip'), null);
  assert.not.ok(existsSync(join(root, 'uploads', 'slow.zip')));
  const listed = [];
  for await (const o of storage.list('')) listed.push(o.key);
  assert.equal(listed, []);
  src.push(Buffer.alloc(10, 2));
  src.push(null);
  assert.is((await put).size, 1024 * 1024 + 10);
  assert.is(statSync(join(root, 'uploads', 'slow.zip')).size, 1024 * 1024 + 10);
  assert.equal(readdirSync(join(root, '.tmp')), []);
  await cleanup();
});

test('delete removes the folders it leaves empty, and only those', async () => {
  const { root, storage, cleanup } = await fresh();
  await storage.put('logs/op1/analyze.log', Readable.from([Buffer.from('a')]));
  await storage.put('logs/op2/analyze.log', Readable.from([Buffer.from('b')]));
  await storage.delete('logs/op1/analyze.log');
  assert.not.ok(existsSync(join(root, 'logs', 'op1')));
  assert.ok(existsSync(join(root, 'logs', 'op2', 'analyze.log')));
  await storage.delete('logs/op2/analyze.log');
  assert.not.ok(existsSync(join(root, 'logs')));
  assert.ok(existsSync(join(root, '.tmp')));
  await cleanup();
});

test("a key that runs into another key's folder is a conflict, and nothing is left", async () => {
  const { storage, cleanup, leftovers } = await fresh();
  await storage.put('a/b', Readable.from([Buffer.from('file')]));
  const err = await storage.put('a/b/c', Readable.from([Buffer.from('x')])).catch((e) => e);
  assert.is(err.code, 'conflict');
  assert.equal(await leftovers(), []);
  assert.is((await bytesOf(await storage.get('a/b'))).toString(), 'file');
  await cleanup();
});

test('the plugin keeps objects under <dataDir>/storage', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hoist-data-'));
  const config = loadConfig({}, { dataDir });
  assert.is(storageLocal.id, 'storage-local');
  const storage = await storageLocal.create({ config });
  await storage.start();
  await storage.put('uploads/x.zip', Readable.from([Buffer.from('zip')]));
  assert.ok(existsSync(join(dataDir, 'storage', 'uploads', 'x.zip')));
  rmSync(dataDir, { recursive: true, force: true });
});

test.run();
