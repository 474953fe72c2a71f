import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fileIndexOf, fileIndexPath, forgetFileIndex, heldFileIndex } from '../../../core/deployments/file-index.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-file-index-'));
const root = join(dir, 'release-1');
const file = { size: 2000, type: 'text/html; charset=utf-8', etag: `"${'a'.repeat(64)}"`, mtimeMs: 1 };
const stored = {
  files: {
    'index.html': {
      ...file,
      br: { path: 'release-1.variants.pack', size: 500, offset: 0 },
      gzip: { path: 'release-1.variants.pack', size: 600, offset: 500 },
    },
    // As releases stored before packs name their variants: each a whole file.
    'old.html': { ...file, br: { path: `release-1.variants/${'a'.repeat(64)}.br`, size: 500 } },
  },
};

test('a release without an index reads null', async () => {
  assert.is(await fileIndexOf(join(dir, 'never-indexed')), null);
});

test('the index is read with absolute variant paths, then served from memory', async () => {
  writeFileSync(fileIndexPath(root), JSON.stringify(stored));
  const index = await fileIndexOf(root);
  const { br, gzip } = index!.files['index.html']!;
  assert.equal(br, { path: join(dir, 'release-1.variants.pack'), size: 500, offset: 0 });
  assert.equal(gzip, { path: join(dir, 'release-1.variants.pack'), size: 600, offset: 500 });
  assert.is(index!.files['old.html']!.br!.path, join(dir, 'release-1.variants', `${'a'.repeat(64)}.br`));
  assert.is(index!.files['old.html']!.br!.offset, undefined);
  assert.is(index!.files['index.html']!.size, 2000);
  // Read once: a change on disk is not seen until the process forgets it.
  writeFileSync(fileIndexPath(root), JSON.stringify({ files: {} }));
  assert.is(await fileIndexOf(root), index);
  forgetFileIndex(root);
  assert.equal((await fileIndexOf(root))!.files, {});
});

test('an index whose variants are pending is read again until they are there', async () => {
  const pending = join(dir, 'release-pending');
  const page = { ...file, etag: `"${'b'.repeat(64)}"` };
  writeFileSync(fileIndexPath(pending), JSON.stringify({ files: { 'index.html': page }, variantsPending: Date.now() }));
  const first = (await fileIndexOf(pending))!;
  assert.is(first.files['index.html']!.br, undefined);
  const br = { path: 'release-pending.variants.pack', size: 500, offset: 0 };
  writeFileSync(fileIndexPath(pending), JSON.stringify({ files: { 'index.html': { ...page, br } } }));
  // The held one answers at once; a read in the background replaces it within a few tens of milliseconds.
  assert.is(heldFileIndex(pending), first);
  let now = first;
  for (let i = 0; i < 100 && now === first; i++) {
    await new Promise((r) => setTimeout(r, 10));
    now = heldFileIndex(pending)!;
  }
  assert.equal(now.files['index.html']!.br, { ...br, path: join(dir, 'release-pending.variants.pack') });
  assert.is(now.variantsPending, undefined);
  // Done: not read again.
  writeFileSync(fileIndexPath(pending), JSON.stringify({ files: {}, variantsPending: Date.now() }));
  await new Promise((r) => setTimeout(r, 60));
  assert.is(heldFileIndex(pending), now);
  await new Promise((r) => setTimeout(r, 20));
  assert.is(await fileIndexOf(pending), now);
});

test('an index pending for over a minute is read again only every 5 s', async () => {
  const stale = join(dir, 'release-stale');
  const pendingSince = Date.now() - 120_000;
  writeFileSync(fileIndexPath(stale), JSON.stringify({ files: {}, variantsPending: pendingSince }));
  const first = (await fileIndexOf(stale))!;
  await new Promise((r) => setTimeout(r, 30));
  // Read again once (still pending: another object), then not for 5 s.
  heldFileIndex(stale);
  let held = first;
  for (let i = 0; i < 100 && held === first; i++) {
    await new Promise((r) => setTimeout(r, 10));
    held = heldFileIndex(stale)!;
  }
  assert.is.not(held, first, 'read again after 25 ms');
  assert.is(held.variantsPending, pendingSince);
  writeFileSync(fileIndexPath(stale), JSON.stringify({ files: { 'a.html': file } }));
  for (let i = 0; i < 10; i++) {
    await new Promise((r) => setTimeout(r, 10));
    assert.is(heldFileIndex(stale), held, 'not read again within 5 s');
  }
  forgetFileIndex(stale);
});

test('a pending index forgotten meanwhile (its release removed) is not brought back by its read', async () => {
  const gone = join(dir, 'release-gone');
  writeFileSync(fileIndexPath(gone), JSON.stringify({ files: {}, variantsPending: Date.now() }));
  await fileIndexOf(gone);
  await new Promise((r) => setTimeout(r, 30));
  heldFileIndex(gone);
  forgetFileIndex(gone);
  await new Promise((r) => setTimeout(r, 30));
  assert.is(heldFileIndex(gone), undefined);
});

test('an index that is not JSON rejects rather than serving nothing', async () => {
  const broken = join(dir, 'broken');
  writeFileSync(fileIndexPath(broken), '{"files": ');
  await fileIndexOf(broken).then(
    () => assert.unreachable('resolved'),
    (err: Error) => assert.instance(err, SyntaxError),
  );
});

test.after(() => rmSync(dir, { recursive: true, force: true }));
test.run();
