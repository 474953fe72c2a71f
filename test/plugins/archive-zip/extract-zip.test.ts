import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ArchiveError } from '../../../plugins/archive-zip/archive-error.js';
import type { ArchiveManifest } from '../../../plugins/archive-zip/archive-types.js';
import { extractZip } from '../../../plugins/archive-zip/extract-zip.js';
import { inspectZip } from '../../../plugins/archive-zip/inspect-zip.js';
import { rawZip, unixAttrs, type RawEntry } from '../../helpers/raw-zip.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-extract-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const fresh = (what: string) => join(dir, `${what}-${++n}`);

function zipFile(entries: RawEntry[]): string {
  const path = fresh('zip');
  writeFileSync(path, rawZip(entries));
  return path;
}

/** Asserts the promise rejects with an ArchiveError of this code and entry. */
async function refuses(p: Promise<unknown>, code: string, entry: string | null) {
  try {
    await p;
  } catch (err) {
    assert.instance(err, ArchiveError);
    assert.is((err as ArchiveError).details.code, code, (err as Error).message);
    assert.is((err as ArchiveError).details.entry, entry);
    return;
  }
  assert.unreachable(`expected ${code}`);
}

/** The error a promise rejects with. */
const rejection = (p: Promise<unknown>): Promise<Error> =>
  p.then(
    () => assert.unreachable('expected a rejection') as never,
    (err: Error) => err,
  );

test('round trip: unwrapped, root directory applied, content and modes as declared', async () => {
  const bin = randomBytes(200_000);
  const zip = zipFile([
    { name: 'proj/' },
    { name: 'proj/README.md', data: 'outside the root' },
    { name: 'proj/web/index.html', data: '<h1>hi</h1>', method: 8 },
    { name: 'proj/web/img/logo.bin', data: bin, method: 8, attrs: unixAttrs(0o100600) },
    { name: 'proj/web/bin/start', data: '#!/bin/sh\necho hi\n', attrs: unixAttrs(0o100775) },
    { name: 'proj/web/caf\u00e9.txt', data: 'caf\u00e9', attrs: 0 },
    { name: 'proj/web/.nojekyll' },
    { name: '__MACOSX/proj/._README.md', data: 'junk' },
  ]);
  const manifest = await inspectZip(zip, { rootDirectory: 'web' });
  const dest = fresh('dest');
  await extractZip(zip, manifest, dest);
  assert.equal(readdirSync(dest, { recursive: true }).sort(), [
    '.nojekyll',
    'bin',
    'bin/start',
    'caf\u00e9.txt',
    'img',
    'img/logo.bin',
    'index.html',
  ]);
  assert.is(readFileSync(join(dest, 'index.html'), 'utf8'), '<h1>hi</h1>');
  assert.ok(readFileSync(join(dest, 'img/logo.bin')).equals(bin));
  assert.is(readFileSync(join(dest, 'caf\u00e9.txt'), 'utf8'), 'caf\u00e9');
  assert.is(statSync(join(dest, '.nojekyll')).size, 0);
  assert.is(statSync(join(dest, 'bin/start')).mode & 0o777, 0o755);
  assert.is(statSync(join(dest, 'img/logo.bin')).mode & 0o777, 0o644);
  assert.is(statSync(join(dest, 'index.html')).mode & 0o777, 0o644);
});

test('an existing empty destination is fine; a non-empty one is refused and left alone', async () => {
  const zip = zipFile([{ name: 'a.txt', data: 'a' }]);
  const manifest = await inspectZip(zip);
  const empty = fresh('dest');
  mkdirSync(empty);
  await extractZip(zip, manifest, empty);
  assert.is(readFileSync(join(empty, 'a.txt'), 'utf8'), 'a');
  assert.match((await rejection(extractZip(zip, manifest, empty))).message, 'not empty');
  assert.equal(readdirSync(empty), ['a.txt']);
});

test('an entry inflating past its declared size: archive_too_large_uncompressed, destination removed', async () => {
  const zip = zipFile([
    { name: 'first.txt', data: 'written before the lie' },
    { name: 'bomb.bin', data: Buffer.alloc(1_000_000), method: 8, size: 10 },
  ]);
  const manifest = await inspectZip(zip);
  assert.is(manifest.totalSize, 22 + 10);
  const dest = fresh('dest');
  await refuses(extractZip(zip, manifest, dest), 'archive_too_large_uncompressed', 'bomb.bin');
  assert.not.ok(existsSync(dest));
});

test('a lying entry in an existing empty destination leaves it empty', async () => {
  const zip = zipFile([
    { name: 'a/first.txt', data: 'x' },
    { name: 'b.bin', data: Buffer.alloc(100_000), method: 8, size: 10 },
  ]);
  const dest = fresh('dest');
  mkdirSync(dest);
  await refuses(extractZip(zip, await inspectZip(zip), dest), 'archive_too_large_uncompressed', 'b.bin');
  assert.equal(readdirSync(dest), []);
});

test('a short entry or a wrong checksum is archive_invalid and cleaned up', async () => {
  const short = zipFile([
    { name: 'first.txt', data: 'x' },
    { name: 'short.bin', data: 'abc', method: 8, size: 50 },
  ]);
  const dest = fresh('dest');
  await refuses(extractZip(short, await inspectZip(short), dest), 'archive_invalid', 'short.bin');
  assert.not.ok(existsSync(dest));
  const corrupt = zipFile([
    { name: 'first.txt', data: 'x' },
    { name: 'bad.txt', data: 'hello', crc: 1234 },
  ]);
  await refuses(extractZip(corrupt, await inspectZip(corrupt), dest), 'archive_invalid', 'bad.txt');
  assert.not.ok(existsSync(dest));
});

test('cut-off deflate data is archive_invalid naming the entry', async () => {
  const zip = zipFile([
    { name: 'first.txt', data: 'x' },
    { name: 'garbage.bin', data: Buffer.alloc(64, 0xff), method: 8, compressedSize: 2, size: 1 },
  ]);
  const dest = fresh('dest');
  await refuses(extractZip(zip, await inspectZip(zip), dest), 'archive_invalid', 'garbage.bin');
  assert.not.ok(existsSync(dest));
});

test('a manifest path leaving the destination is refused before anything is written there', async () => {
  const zip = zipFile([{ name: 'a.txt', data: 'a' }]);
  const manifest: ArchiveManifest = await inspectZip(zip);
  manifest.files[0].path = '../escaped.txt';
  const parent = fresh('parent');
  await refuses(extractZip(zip, manifest, join(parent, 'dest')), 'archive_path_traversal', 'a.txt');
  assert.not.ok(existsSync(join(parent, 'escaped.txt')));
  assert.not.ok(existsSync(join(parent, 'dest')));
});

test('a folder that turns out to be a link is never written through', async () => {
  // A big first file gives time to plant a link where the next entry's folder will go.
  const zip = zipFile([
    { name: 'a.bin', data: randomBytes(30_000_000) },
    { name: 'sub/b.txt', data: 'b' },
  ]);
  const manifest = await inspectZip(zip);
  const outside = fresh('outside');
  mkdirSync(outside);
  const dest = fresh('dest');
  mkdirSync(dest);
  const plant = setInterval(() => {
    if (!existsSync(join(dest, 'a.bin'))) return;
    clearInterval(plant);
    symlinkSync(outside, join(dest, 'sub'));
  }, 1);
  await refuses(extractZip(zip, manifest, dest), 'archive_symlink', 'sub/b.txt');
  clearInterval(plant);
  assert.equal(readdirSync(outside), []);
  assert.equal(readdirSync(dest), []);
});

test('an archive changed since inspection is archive_invalid', async () => {
  const zip = zipFile([{ name: 'a.txt', data: 'a' }]);
  const manifest = await inspectZip(zip);
  writeFileSync(zip, rawZip([{ name: 'a.txt', data: 'longer now' }]));
  await refuses(extractZip(zip, manifest, fresh('dest')), 'archive_invalid', 'a.txt');
  writeFileSync(zip, rawZip([{ name: 'b.txt', data: 'a' }]));
  await refuses(extractZip(zip, manifest, fresh('dest')), 'archive_invalid', 'a.txt');
});

test('an aborted extraction rejects with the reason and removes what it wrote', async () => {
  const zip = zipFile(
    Array.from({ length: 30 }, (_, i) => ({ name: `f${i}.bin`, data: randomBytes(1_000_000), method: 8 })),
  );
  const manifest = await inspectZip(zip);
  const dest = fresh('dest');
  const ac = new AbortController();
  const watch = setInterval(() => existsSync(join(dest, 'f0.bin')) && ac.abort(new Error('canceled by user')), 1);
  const err = await rejection(extractZip(zip, manifest, dest, { signal: ac.signal }));
  clearInterval(watch);
  assert.is(err.message, 'canceled by user');
  assert.not.ok(existsSync(dest));
  assert.is((await rejection(extractZip(zip, manifest, dest, { signal: ac.signal }))).message, 'canceled by user');
  assert.not.ok(existsSync(dest));
});

test.run();
