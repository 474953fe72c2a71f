import {
  chmodSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes } from 'node:crypto';
import yauzl from 'yauzl';
import { HoistError } from '../../../core/errors.js';
import { ArchiveError } from '../../../plugins/archive-zip/archive-error.js';
import { extractZip } from '../../../plugins/archive-zip/extract-zip.js';
import { inspectZip } from '../../../plugins/archive-zip/inspect-zip.js';
import { IN_MEMORY_BYTES, packDirectory } from '../../../plugins/archive-zip/pack-directory.js';
import { ZipArchive } from '../../../plugins/archive-zip/zip-archive.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-pack-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const fresh = (what: string) => join(dir, `${what}-${++n}`);

/** A small build output: nested folders, an executable, an empty folder. */
function tree(): string {
  const root = fresh('tree');
  mkdirSync(join(root, 'assets/img'), { recursive: true });
  mkdirSync(join(root, 'empty'));
  writeFileSync(join(root, 'index.html'), '<h1>hello</h1>'.repeat(50));
  writeFileSync(join(root, 'assets/app.js'), 'console.log(1)');
  writeFileSync(join(root, 'assets/img/a-b.svg'), '<svg/>');
  writeFileSync(join(root, 'server.sh'), '#!/bin/sh\n');
  chmodSync(join(root, 'server.sh'), 0o755);
  return root;
}

test('packing the same content twice gives identical bytes, whatever the times', async () => {
  const src = tree();
  const first = fresh('a.zip');
  await packDirectory(src, first);
  utimesSync(join(src, 'index.html'), new Date(2011, 1, 1), new Date(2011, 1, 1));
  const second = fresh('b.zip');
  await packDirectory(src, second);
  assert.ok(readFileSync(first).equals(readFileSync(second)));
  const copy = tree();
  const third = fresh('c.zip');
  await packDirectory(copy, third);
  assert.ok(readFileSync(first).equals(readFileSync(third)));
});

test('a packed directory inspects and extracts back to the same files, sorted, with modes', async () => {
  const src = tree();
  const zip = fresh('out.zip');
  await packDirectory(src, zip);
  const manifest = await inspectZip(zip);
  assert.equal(
    manifest.files.map((f) => [f.path, f.mode]),
    [
      ['assets/app.js', 0o644],
      ['assets/img/a-b.svg', 0o644],
      ['index.html', 0o644],
      ['server.sh', 0o755],
    ],
  );
  const dest = fresh('dest');
  await extractZip(zip, manifest, dest);
  for (const f of manifest.files)
    assert.ok(readFileSync(join(dest, f.path)).equals(readFileSync(join(src, f.path))), f.path);
  assert.is(statSync(join(dest, 'server.sh')).mode & 0o777, 0o755);
});

test('a symbolic link in the tree is archive_symlink with its path, and no ZIP is written', async () => {
  const src = tree();
  symlinkSync('../index.html', join(src, 'assets/link.html'));
  const zip = fresh('out.zip');
  try {
    await packDirectory(src, zip);
    assert.unreachable('expected archive_symlink');
  } catch (err) {
    assert.instance(err, ArchiveError);
    assert.equal((err as ArchiveError).details, { code: 'archive_symlink', entry: 'assets/link.html' });
  }
  assert.not.ok(existsSync(zip));
  assert.ok(readdirSync(src).includes('assets'));
});

test('a name an upload could not have (control character, path past 1,024 bytes): refused, no ZIP', async () => {
  const cases: [string, string][] = [
    ['assets/bad\nname.html', 'archive_control_character'],
    ['\u001b[31m.html', 'archive_control_character'],
    [
      `${'d'.repeat(250)}/${'d'.repeat(250)}/${'d'.repeat(250)}/${'d'.repeat(250)}/${'f'.repeat(30)}`,
      'archive_path_too_long',
    ],
  ];
  for (const [path, code] of cases) {
    const src = tree();
    mkdirSync(join(src, path, '..'), { recursive: true });
    writeFileSync(join(src, path), 'x');
    const zip = fresh('out.zip');
    try {
      await packDirectory(src, zip);
      assert.unreachable(`expected ${code}`);
    } catch (err) {
      assert.instance(err, ArchiveError);
      assert.equal((err as ArchiveError).details, { code, entry: path });
      assert.not.match((err as Error).message, /[\u0000-\u001f]/);
      assert.not.ok((err as Error).message.includes(src), 'no server path in the message');
    }
    assert.not.ok(existsSync(zip));
  }
});

test('already compressed formats are stored as they are; the rest is deflated', async () => {
  const src = fresh('tree');
  mkdirSync(src);
  for (const name of ['logo.png', 'photo.JPG', 'font.woff2', 'index.html', 'app.js'])
    writeFileSync(join(src, name), name.repeat(100));
  const zip = fresh('out.zip');
  await packDirectory(src, zip);
  const methods: Record<string, number> = {};
  const z = await yauzl.openPromise(zip, { lazyEntries: true });
  for await (const entry of z.eachEntry()) methods[entry.fileName] = entry.compressionMethod;
  z.close();
  assert.equal(methods, { 'app.js': 8, 'font.woff2': 0, 'index.html': 8, 'logo.png': 0, 'photo.JPG': 0 });
});

/** Packing `src` to a fresh path with `maxBytes`: the error it rejects with (fails the test when it resolves). */
async function refusal(src: string, maxBytes: number, pack = packDirectory): Promise<{ err: unknown; zip: string }> {
  const zip = fresh('capped.zip');
  try {
    await pack(src, zip, { maxBytes });
  } catch (err) {
    return { err, zip };
  }
  assert.unreachable(`packing ${src} within ${maxBytes} bytes resolved`);
  throw new Error('unreachable');
}

const openFiles = () => readdirSync('/proc/self/fd').length;

test('with maxBytes, a ZIP that passes them stops packing: payload_too_large with the limit, no file', async () => {
  // A small tree (packed from memory) and a large one (streamed): one 4 MiB file that does not compress, at 50 paths.
  const small = tree();
  writeFileSync(join(small, 'noise.bin'), randomBytes(256 * 1024));
  const large = fresh('large');
  mkdirSync(join(large, 'd'), { recursive: true });
  writeFileSync(join(large, 'first.png'), randomBytes(4 << 20));
  for (let i = 0; i < 50; i++) linkSync(join(large, 'first.png'), join(large, 'd', `copy-${i}.png`));
  assert.ok(51 * (4 << 20) > IN_MEMORY_BYTES);
  const before = openFiles();
  for (const [src, maxBytes] of [
    [small, 64 * 1024],
    [large, 1 << 20],
  ] as const) {
    const { err, zip } = await refusal(src, maxBytes);
    assert.instance(err, HoistError);
    assert.is((err as HoistError).code, 'payload_too_large');
    assert.equal((err as HoistError).details, { limit: maxBytes });
    assert.match((err as Error).message, `larger than ${maxBytes} bytes`);
    assert.not.ok(existsSync(zip), 'no partial ZIP');
  }
  // The files it was reading when it stopped were closed.
  await new Promise((r) => setTimeout(r, 50));
  assert.ok(openFiles() <= before, `${openFiles()} files open, ${before} before`);
  // ZipArchive passes the cap on, and the error as it is.
  const { err } = await refusal(large, 1 << 20, (src, zip, opts) => new ZipArchive().pack(src, zip, opts));
  assert.is((err as HoistError).code, 'payload_too_large');
});

test('a ZIP of exactly maxBytes is written whole, the same bytes as without a cap', async () => {
  const src = tree();
  const free = fresh('free.zip');
  await packDirectory(src, free);
  const size = statSync(free).size;
  const capped = fresh('capped.zip');
  await packDirectory(src, capped, { maxBytes: size });
  assert.ok(readFileSync(capped).equals(readFileSync(free)));
  const { err } = await refusal(src, size - 1);
  assert.is((err as HoistError).code, 'payload_too_large');
});

test.run();
