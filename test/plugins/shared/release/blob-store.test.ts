import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BlobStore, blobName, inTurns, sha256Of } from '../../../../plugins/shared/release/blob-store.js';

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

test('adopt rejects, without looping, when the file is gone', async () => {
  const { store, work } = fresh();
  const gone = await store.adopt(join(work, 'missing.txt'), blobName('d'.repeat(64))).catch((e) => e);
  assert.is((gone as NodeJS.ErrnoException).code, 'ENOENT');
});

test('put links a blob the store has, even one this process never saw (after a restart)', async () => {
  const { store, work } = fresh();
  const name = await adopted(store, join(work, 'a.txt'), 'kept');
  const before = statSync(store.pathOf(name));
  const restarted = new BlobStore(store.dir);
  const mtimeMs = await restarted.put(name, join(work, 'b.txt'), Buffer.from('kept'));
  const after = statSync(store.pathOf(name));
  assert.is(statSync(join(work, 'b.txt')).ino, before.ino, 'a link to the blob');
  assert.is(after.nlink, 3);
  assert.is(after.mtimeMs, before.mtimeMs, 'the blob is not written again');
  assert.is(mtimeMs, before.mtimeMs);
  // Known now: the next put links it at once.
  await restarted.put(name, join(work, 'c.txt'), Buffer.from('kept'));
  assert.is(statSync(join(work, 'c.txt')).ino, before.ino);
  assert.equal(readdirSync(work).sort(), ['a.txt', 'b.txt', 'c.txt'], 'no temporary file left');
});

test('put writes again a blob that was released after the store had it', async () => {
  const { store, work } = fresh();
  const data = Buffer.from('comes and goes');
  const name = blobName(createHash('sha256').update(data).digest('hex'));
  await store.put(name, join(work, 'a.txt'), data);
  rmSync(join(work, 'a.txt'));
  assert.is(await store.release([name]), 1);
  await store.put(name, join(work, 'b.txt'), data);
  assert.is(await readFile(store.pathOf(name), 'utf8'), 'comes and goes');
  assert.is(statSync(join(work, 'b.txt')).ino, statSync(store.pathOf(name)).ino);
  // Removed behind the store's back (another process's collection): put still writes it again.
  rmSync(join(work, 'b.txt'));
  rmSync(store.pathOf(name));
  await store.put(name, join(work, 'c.txt'), data);
  assert.is(statSync(join(work, 'c.txt')).ino, statSync(store.pathOf(name)).ino);
});

test('releasing and collecting many blobs remove only the unused ones', async () => {
  const { store, work } = fresh();
  const names: string[] = [];
  for (let i = 0; i < 300; i++) {
    const data = Buffer.from(`blob ${i}`);
    const name = blobName(createHash('sha256').update(data).digest('hex'));
    await store.put(name, join(work, `${i}.txt`), data);
    names.push(name);
  }
  // Every third file stays linked from the work folder.
  for (let i = 0; i < 300; i++) if (i % 3) rmSync(join(work, `${i}.txt`));
  assert.is(await store.release(names.slice(0, 150)), 100);
  assert.is(await store.collect(0), 100, 'the other unused ones');
  for (let i = 0; i < 300; i++) assert.is(existsSync(store.pathOf(names[i])), i % 3 === 0, `blob ${i}`);
});

test('inTurns handles every item in order, giving the event loop a turn once a millisecond has passed', async () => {
  let turns = 0;
  let counting = true;
  const count = () => counting && (turns++, setImmediate(count));
  /** The event loop's turns while inTurns runs `fn` on `n` items (their order checked). */
  const turnsOver = async (n: number, fn: () => void) => {
    turns = 0;
    counting = true;
    setImmediate(count);
    const seen: number[] = [];
    await inTurns(
      Array.from({ length: n }, (_, i) => i),
      (i) => {
        fn();
        seen.push(i);
      },
    );
    counting = false;
    assert.equal(seen, [...Array(n).keys()]);
    return turns;
  };
  // Each call takes 0.25 ms (a slow unlink): 20 of them take 5 ms, however fast the machine.
  const slow = await turnsOver(20, () => {
    const until = performance.now() + 0.25;
    while (performance.now() < until);
  });
  assert.ok(slow >= 3, `the event loop had ${slow} turns in 5 ms of calls`);
  // 1,000 calls of nothing take far less than a millisecond: no turn between them.
  const fast = await turnsOver(1000, () => {});
  assert.ok(fast <= 2, `the event loop had ${fast} turns in 1,000 calls of nothing`);
});

test.after(() => rmSync(root, { recursive: true, force: true }));
test.run();
