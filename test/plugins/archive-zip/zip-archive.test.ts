import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { StageError } from '../../../core/errors.js';
import { ZipArchive } from '../../../plugins/archive-zip/zip-archive.js';
import { rawZip } from '../../helpers/raw-zip.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-zip-archive-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

/** A ZIP of `names` (each file holding its name) written as a new file, then renamed to `path`, as storage does. */
function put(path: string, names: string[]): string {
  const temp = join(dir, `.tmp-${++n}`);
  writeFileSync(temp, rawZip(names.map((name) => ({ name, data: name }))));
  renameSync(temp, path);
  return path;
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

test.run();
