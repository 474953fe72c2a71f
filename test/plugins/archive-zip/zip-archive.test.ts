import { mkdtempSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { StageError } from '../../../core/errors.js';
import type { ArchiveContent, ArchiveManifest } from '../../../core/ports/archive.js';
import { ZipArchive } from '../../../plugins/archive-zip/zip-archive.js';
import { rawZip, unixAttrs, type RawEntry } from '../../helpers/raw-zip.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-zip-archive-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

/** A ZIP of `entries` written as a new file, then renamed to `path`, as storage does. */
function write(path: string, entries: RawEntry[]): string {
  const temp = join(dir, `.tmp-${++n}`);
  writeFileSync(temp, rawZip(entries));
  renameSync(temp, path);
  return path;
}
/** A ZIP of `names`, each file holding its name (see write). */
function put(path: string, names: string[]): string {
  return write(
    path,
    names.map((name) => ({ name, data: name })),
  );
}
const paths = (m: { files: { path: string }[] }) => m.files.map((f) => f.path);

test('a ZIP inspected again is answered with the manifest kept the first time, frozen', async () => {
  const archive = new ZipArchive();
  const zip = put(join(dir, 'same.zip'), ['site/index.html', 'site/a.css']);
  const first = await archive.inspect(zip, {});
  const again = await archive.inspect(zip, {});
  assert.is(again, first);
  assert.equal(paths(again), ['index.html', 'a.css']);
  assert.ok(Object.isFrozen(again) && Object.isFrozen(again.files) && Object.isFrozen(again.files[0]));
  assert.throws(() => (again.files as unknown as string[]).push('x'));
});

test('another root directory is another manifest', async () => {
  const archive = new ZipArchive();
  const zip = put(join(dir, 'roots.zip'), ['index.html', 'docs/index.html', 'docs/guide.html']);
  assert.equal(paths(await archive.inspect(zip, {})), ['index.html', 'docs/index.html', 'docs/guide.html']);
  assert.equal(paths(await archive.inspect(zip, { rootDirectory: 'docs' })), ['index.html', 'guide.html']);
  assert.equal(paths(await archive.inspect(zip, {})), ['index.html', 'docs/index.html', 'docs/guide.html']);
});

test('another file at the same path is inspected anew, the same size and a moment later too', async () => {
  const archive = new ZipArchive();
  const zip = put(join(dir, 'replaced.zip'), ['one.html']);
  assert.equal(paths(await archive.inspect(zip, {})), ['one.html']);
  put(zip, ['two.html']);
  assert.equal(paths(await archive.inspect(zip, {})), ['two.html']);
  // A refusal is never kept: the archive that replaces a refused one is inspected.
  put(zip, ['../escape.html']);
  const refused = await archive.inspect(zip, {}).catch((err: unknown) => err);
  assert.instance(refused, StageError);
  assert.is((refused as StageError).code, 'archive_path_traversal');
  put(zip, ['ten.html']);
  assert.equal(paths(await archive.inspect(zip, {})), ['ten.html']);
});

test('a missing file is refused as it was before, and nothing is kept for it', async () => {
  const archive = new ZipArchive();
  const zip = join(dir, 'missing.zip');
  const err = await archive.inspect(zip, {}).catch((e: NodeJS.ErrnoException) => e);
  assert.is((err as NodeJS.ErrnoException).code, 'ENOENT');
  put(zip, ['late.html']);
  assert.equal(paths(await archive.inspect(zip, {})), ['late.html']);
});

/** What `each` hands over for every file: path, size, executable, bytes, and the gzip encoding decoded. */
async function contents(archive: ZipArchive, zip: string, manifest: ArchiveManifest) {
  const seen: unknown[] = [];
  await archive.each(zip, manifest, async (f: ArchiveContent) => {
    const { path, size, executable } = f;
    seen.push({ path, size, executable, data: f.data?.toString(), gzip: f.gzip && gunzipSync(f.gzip()).toString() });
  });
  return seen;
}

/** A ZIP of a deflated page, a stored script and an executable, written as storage writes it. */
const site = (path: string) =>
  write(path, [
    { name: 'index.html', data: '<p>page</p>'.repeat(100), method: 8 },
    { name: 'app.js', data: 'console.log(1)' },
    { name: 'bin/run', data: '#!/bin/sh', attrs: unixAttrs(0o100755) },
  ]);

/** Inspects and reads the ZIP at `zip` with `archive`, then removes the file; resolves the manifest. */
async function readThenRemove(archive: ZipArchive, zip: string) {
  const manifest = await archive.inspect(zip, {});
  (await archive.read(zip, manifest)).close();
  unlinkSync(zip);
  return manifest;
}

/** The code `archive.each` of `zip` rejects with (ENOENT: it read the file, which is gone). */
const eachFails = (archive: ZipArchive, zip: string, manifest: ArchiveManifest) =>
  archive
    .each(zip, manifest, async () => {})
    .then(
      () => 'resolved',
      (e: NodeJS.ErrnoException) => e.code,
    );

test('the files read is kept for one each of that archive: the same contents, nothing read again', async () => {
  const archive = new ZipArchive();
  const zip = site(join(dir, 'kept.zip'));
  const expected = await contents(new ZipArchive(), zip, await new ZipArchive().inspect(zip, {}));
  assert.equal((expected[0] as { gzip: string }).gzip, '<p>page</p>'.repeat(100));
  assert.equal((expected[2] as { executable: boolean }).executable, true);
  const manifest = await archive.inspect(zip, {});
  const reader = await archive.read(zip, manifest);
  assert.is((await reader.readFile('app.js', 100))?.toString(), 'console.log(1)');
  reader.close();
  unlinkSync(zip);
  // The archive is gone: its checked contents come from memory, once.
  assert.equal(await contents(archive, zip, manifest), expected);
  assert.is(await eachFails(archive, zip, manifest), 'ENOENT');
});

test('an extract after a read writes the kept contents (modes too), once', async () => {
  const archive = new ZipArchive();
  const zip = site(join(dir, 'extracted.zip'));
  const manifest = await readThenRemove(archive, zip);
  const dest = join(dir, 'extracted');
  await archive.extract(zip, manifest, dest);
  assert.is(readFileSync(join(dest, 'index.html'), 'utf8'), '<p>page</p>'.repeat(100));
  assert.is(readFileSync(join(dest, 'app.js'), 'utf8'), 'console.log(1)');
  assert.is(statSync(join(dest, 'bin/run')).mode & 0o777, 0o755);
  assert.is(statSync(join(dest, 'app.js')).mode & 0o777, 0o644);
  const again = await archive.extract(zip, manifest, join(dir, 'again')).catch((e: NodeJS.ErrnoException) => e);
  assert.is((again as NodeJS.ErrnoException).code, 'ENOENT');
});

test('kept contents are only for the archive read: not another path, manifest or replaced file', async () => {
  const archive = new ZipArchive();
  const zip = site(join(dir, 'first.zip'));
  const manifest = await archive.inspect(zip, {});
  (await archive.read(zip, manifest)).close();
  // The same manifest with another path reads that path.
  const other = put(join(dir, 'other.zip'), ['index.html', 'app.js', 'bin/run']);
  const err = await contents(archive, other, manifest).catch((e: unknown) => e);
  assert.instance(err, StageError);
  assert.is((err as StageError).code, 'archive_invalid');
  // A manifest that is not kept (a copy) keeps nothing: the replaced file is read as it now is.
  const copy = { ...manifest, files: [...manifest.files] };
  (await archive.read(zip, copy)).close();
  put(zip, ['index.html', 'app.js', 'bin/run']);
  const differs = await contents(archive, zip, copy).catch((e: unknown) => e);
  assert.is((differs as StageError).code, 'archive_invalid');
  // A file replaced between inspect and read: nothing kept, each reads the file (here gone).
  const replaced = site(join(dir, 'replaced-after.zip'));
  const seen = await archive.inspect(replaced, {});
  site(replaced);
  (await archive.read(replaced, seen)).close();
  unlinkSync(replaced);
  assert.is(await eachFails(archive, replaced, seen), 'ENOENT');
});

test('kept contents go with their manifest: past 16 kept manifests the first is read from its file again', async () => {
  const archive = new ZipArchive();
  const zip = site(join(dir, 'evicted.zip'));
  const manifest = await readThenRemove(archive, zip);
  for (let i = 0; i < 16; i++) await archive.inspect(put(join(dir, `more-${i}.zip`), [`${i}.html`]), {});
  assert.is(await eachFails(archive, zip, manifest), 'ENOENT');
});

test('a file past the in-memory entry size keeps nothing: each streams it from the archive', async () => {
  const archive = new ZipArchive();
  const zip = write(join(dir, 'big.zip'), [
    { name: 'big.txt', data: 'x'.repeat(1024 * 1024 + 1), method: 8 },
    { name: 'a.txt', data: 'a' },
  ]);
  const manifest = await readThenRemove(archive, zip);
  assert.is(await eachFails(archive, zip, manifest), 'ENOENT');
});

test.run();
