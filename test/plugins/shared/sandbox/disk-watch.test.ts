import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ENTRY_BYTES, overDisk, treeBytes } from '../../../../plugins/shared/sandbox/disk-watch.js';

const root = mkdtempSync(join(tmpdir(), 'hoist-disk-watch-'));
test.after(() => rmSync(root, { recursive: true, force: true }));
const MiB = 1024 * 1024;

test('a sparse file counts for its length, not the blocks it took (a copy or an archive reads all of it)', async () => {
  const dir = join(root, 'sparse');
  mkdirSync(dir);
  for (let i = 0; i < 10; i++) {
    writeFileSync(join(dir, `f${i}`), '');
    await truncate(join(dir, `f${i}`), 60 * MiB);
  }
  assert.ok((await treeBytes(dir, Infinity)) >= 600 * MiB);
  assert.ok(await overDisk([dir], 64 * MiB));
});

test('folders and empty files count for a block each: they take inodes and disk that blocks alone miss', async () => {
  const dir = join(root, 'entries');
  for (let i = 0; i < 300; i++) mkdirSync(join(dir, `d${i}`), { recursive: true });
  for (let i = 0; i < 300; i++) writeFileSync(join(dir, `e${i}`), '');
  assert.ok((await treeBytes(dir, Infinity)) >= 600 * ENTRY_BYTES);
  assert.ok(await overDisk([dir], 2 * MiB));
  assert.not.ok(await overDisk([dir], 4 * MiB));
});

test('counting stops once past the cap', async () => {
  const dir = join(root, 'capped');
  mkdirSync(dir);
  for (let i = 0; i < 100; i++) writeFileSync(join(dir, `e${i}`), '');
  const counted = await treeBytes(dir, 10 * ENTRY_BYTES);
  assert.ok(counted > 10 * ENTRY_BYTES && counted <= 11 * ENTRY_BYTES, String(counted));
});

test.run();
