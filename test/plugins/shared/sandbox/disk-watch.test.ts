import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ENTRY_BYTES, overDisk, treeBytes } from '../../../../plugins/shared/sandbox/disk-watch.js';
import { makeDeepTree } from '../../../helpers/deep-tree.js';
import { runUnprivileged } from '../../../helpers/unprivileged.js';

const root = mkdtempSync(join(tmpdir(), 'hoist-disk-watch-'));
// rm(1): a tree deeper than PATH_MAX is made below.
test.after(() => void execFileSync('rm', ['-rf', root]));
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

test('data below a folder deeper than PATH_MAX is counted (Node.js cannot open a path that long)', async () => {
  const dir = join(root, 'deep');
  mkdirSync(dir);
  makeDeepTree(dir, { depth: 1400, bytes: 8 * MiB });
  const counted = await treeBytes(dir, Infinity);
  assert.ok(counted >= 8 * MiB + 1400 * ENTRY_BYTES, String(counted));
  assert.ok(await overDisk([dir], 12 * MiB));
});

test('a folder Hoist cannot read (run unprivileged) counts as over any limit, not as empty', async () => {
  const out = await runUnprivileged(`
    import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
    import { tmpdir } from 'node:os';
    import { join } from 'node:path';
    import { overDisk, treeBytes } from 'REPO/plugins/shared/sandbox/disk-watch.js';
    const dir = mkdtempSync(join(tmpdir(), 'hoist-disk-hidden-'));
    mkdirSync(join(dir, 'hidden'));
    writeFileSync(join(dir, 'hidden', 'f'), Buffer.alloc(1 << 20));
    chmodSync(join(dir, 'hidden'), 0o300);
    const bytes = await treeBytes(dir, Infinity);
    const over = await overDisk([dir], 64 << 20);
    chmodSync(join(dir, 'hidden'), 0o700);
    rmSync(dir, { recursive: true });
    console.log(JSON.stringify({ bytes: String(bytes), over }));
  `);
  assert.equal(JSON.parse(out), { bytes: 'Infinity', over: true });
});

test('a folder that is not there counts 0', async () => {
  assert.is(await treeBytes(join(root, 'absent'), Infinity), 0);
});

test.run();
