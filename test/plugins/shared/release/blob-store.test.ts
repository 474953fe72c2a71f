import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BlobStore, blobName, sha256Of } from '../../../../plugins/shared/release/blob-store.js';

const root = mkdtempSync(join(tmpdir(), 'hoist-blobs-'));
let n = 0;
/** A fresh store and a work folder beside it (same filesystem). */
function fresh() {
  const dir = join(root, String(++n));
  const store = new BlobStore(join(dir, 'blobs'));
  const work = join(dir, 'work');
  mkdirSync(work, { recursive: true });
  return { store, work };
}

async function adopted(store: BlobStore, path: string, content: string) {
  await writeFile(path, content);
  const name = blobName(await sha256Of(path));
  await store.adopt(path, name);
  return name;
}

test('two files with the same content become links to one read-only blob', async () => {
  const { store, work } = fresh();
  const a = await adopted(store, join(work, 'a.txt'), 'same bytes');
  const b = await adopted(store, join(work, 'b.txt'), 'same bytes');
  assert.is(a, b);
  const blob = statSync(store.pathOf(a));
  assert.is(statSync(join(work, 'a.txt')).ino, blob.ino);
  assert.is(statSync(join(work, 'b.txt')).ino, blob.ino);
  assert.is(blob.nlink, 3);
  assert.is(blob.mode & 0o777, 0o444);
  assert.is(await readFile(store.pathOf(a), 'utf8'), 'same bytes');
  // Nothing else is left in the store: no temporary file.
  assert.equal(readdirSync(join(store.dir, a.slice(0, 2))), [a]);
});

test('an executable file gets its own blob, 0555', async () => {
  const { store, work } = fresh();
  const path = join(work, 'run.sh');
  await writeFile(path, '#!/bin/sh\n', { mode: 0o755 });
  const name = blobName(await sha256Of(path), true);
  await store.adopt(path, name);
  assert.ok(name.endsWith('-x'));
  assert.is(statSync(store.pathOf(name)).mode & 0o777, 0o555);
});

test('a blob that is there is never written again, not by a file with other bytes under its name', async () => {
  const { store, work } = fresh();
  const name = await adopted(store, join(work, 'a.txt'), 'original');
  // A file that claims the same name (a caller's bug, or a hostile race) ends up a link to the stored blob.
  await writeFile(join(work, 'liar.txt'), 'forged');
  await store.adopt(join(work, 'liar.txt'), name);
  assert.is(await readFile(store.pathOf(name), 'utf8'), 'original');
  assert.is(await readFile(join(work, 'liar.txt'), 'utf8'), 'original');
});

test('collect removes unreferenced blobs and old temporary files, never a linked one, none in grace', async () => {
  const { store, work } = fresh();
  const kept = await adopted(store, join(work, 'kept.txt'), 'in use');
  const orphan = await adopted(store, join(work, 'orphan.txt'), 'no longer used');
  rmSync(join(work, 'orphan.txt'));
  const temp = join(store.dir, orphan.slice(0, 2), `.${orphan}.abcd.tmp`);
  await writeFile(temp, 'half written');
  // Within the grace period nothing goes.
  assert.is(await store.collect(60_000), 0);
  assert.ok(existsSync(store.pathOf(orphan)));
  assert.is(await store.collect(0), 2);
  assert.not.ok(existsSync(store.pathOf(orphan)));
  assert.not.ok(existsSync(temp));
  assert.ok(existsSync(store.pathOf(kept)));
  assert.is(await readFile(join(work, 'kept.txt'), 'utf8'), 'in use');
  // Files that are not the store's own are left alone.
  await writeFile(join(store.dir, 'README'), 'x');
  assert.is(await store.collect(0), 0);
  assert.ok(existsSync(join(store.dir, 'README')));
});

test('release removes only the named blobs nothing links to', async () => {
  const { store, work } = fresh();
  const a = await adopted(store, join(work, 'a.txt'), 'A');
  const b = await adopted(store, join(work, 'b.txt'), 'B');
  rmSync(join(work, 'a.txt'));
  assert.is(await store.release([a, b, a, blobName('0'.repeat(64))]), 1);
  assert.not.ok(existsSync(store.pathOf(a)));
  assert.ok(existsSync(store.pathOf(b)));
});

test('a blob collected while a file is being adopted is added again', async () => {
  const { store, work } = fresh();
  const name = await adopted(store, join(work, 'a.txt'), 'shared');
  rmSync(join(work, 'a.txt'));
  await store.release([name]);
  const again = await adopted(store, join(work, 'b.txt'), 'shared');
  assert.is(again, name);
  assert.is(statSync(store.pathOf(name)).nlink, 2);
});

test('add writes a blob once, links it, and keeps nothing that keep refuses', async () => {
  const { store, work } = fresh();
  let writes = 0;
  const write = async (temp: string) => {
    writes++;
    await writeFile(temp, 'compressed', { flag: 'wx' });
  };
  const name = blobName('a'.repeat(64), false, '.br');
  assert.is(await store.add(name, join(work, 'one.br'), write), 10);
  assert.is(await store.add(name, join(work, 'two.br'), write), 10);
  // The same target twice (two files of a release with the same content): its size, no error.
  assert.is(await store.add(name, join(work, 'two.br'), write), 10);
  assert.is(writes, 1);
  assert.is(statSync(store.pathOf(name)).nlink, 3);
  const refused = blobName('b'.repeat(64), false, '.gz');
  assert.is(await store.add(refused, join(work, 'x.gz'), write, () => false), null);
  assert.not.ok(existsSync(store.pathOf(refused)));
  assert.not.ok(existsSync(join(work, 'x.gz')));
  assert.equal(readdirSync(join(store.dir, 'bb')), []);
});

test('add and adopt reject, without looping, when the place to link at is gone', async () => {
  const { store, work } = fresh();
  const name = blobName('c'.repeat(64), false, '.gz');
  const write = (temp: string) => writeFile(temp, 'bytes');
  const err = await store.add(name, join(work, 'missing', 'x.gz'), write).catch((e: NodeJS.ErrnoException) => e);
  assert.is((err as NodeJS.ErrnoException).code, 'ENOENT');
  const gone = await store.adopt(join(work, 'missing.txt'), blobName('d'.repeat(64))).catch((e) => e);
  assert.is((gone as NodeJS.ErrnoException).code, 'ENOENT');
});

test.after(() => rmSync(root, { recursive: true, force: true }));
test.run();
