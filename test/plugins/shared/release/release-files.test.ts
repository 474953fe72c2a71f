import { createHash, randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { FileVariant } from '../../../../core/ports/file-index.js';
import { variantsDir, variantsPack } from '../../../../core/ports/file-index.js';
import { BlobStore } from '../../../../plugins/shared/release/blob-store.js';
import {
  addReleaseVariants,
  KEPT_GZIP_BYTES,
  storeReleaseFiles,
  unlinkReleaseFiles,
  type ReleaseFileSource,
} from '../../../../plugins/shared/release/release-files.js';
import { KnownVariantsMemory } from '../../../../plugins/shared/release/known-variants.js';

const root = mkdtempSync(join(tmpdir(), 'hoist-release-files-'));
let n = 0;
/** A fresh store and the place of a release beside it (same filesystem). */
function fresh() {
  const dir = join(root, String(++n));
  mkdirSync(dir);
  return { dir, store: new BlobStore(join(dir, 'blobs')), release: join(dir, 'release') };
}

/** Every file under `dir`, relative to it. */
const filesUnder = (dir: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((p) => statSync(join(dir, p)).isFile())
    : [];

/**
 * A source of these files: up to 1 MB whole, larger ones as a stream (as Archive.each hands them over); the small
 * ones with `gzip`, their ready gzip encoding, when given.
 */
function sourceOf(files: Record<string, Buffer>, fail?: Error, gzip?: (bytes: Buffer) => Buffer): ReleaseFileSource {
  return async (fn) => {
    for (const [path, bytes] of Object.entries(files)) {
      const big = bytes.length > 1024 * 1024;
      await fn({
        path,
        size: bytes.length,
        executable: false,
        ...(big ? { stream: Readable.from([bytes]) } : { data: bytes, ...(gzip && { gzip: () => gzip(bytes) }) }),
      });
    }
    if (fail) throw fail;
  };
}

const slice = (v: FileVariant) => readFileSync(v.path).subarray(v.offset, v.offset! + v.size);
const text = (seed: string, bytes: number) =>
  Buffer.from(`${seed} `.repeat(Math.ceil(bytes / (seed.length + 1)))).subarray(0, bytes);
// Large (streamed), compressible about by half: hex of random bytes.
const bigText = Buffer.from(randomBytes(800 * 1024).toString('hex'));
const files = {
  'app.js': text('export const answer = 42;', 20_000),
  'style.css': text('body { color: red }', 10_000),
  'copy.js': text('export const answer = 42;', 20_000),
  'small.html': Buffer.from('<h1>small</h1>'),
  'logo.png': randomBytes(4096),
  // Compressible by its type, not by its bytes: no variant, and the room it took in the pack is never read.
  'noise.txt': randomBytes(1200 * 1024),
  'big.js': bigText,
};

test('the variants of a release are in one pack beside it: no variant file, no variant blob', async () => {
  const { dir, store, release } = fresh();
  const index = await storeReleaseFiles(store, release, sourceOf(files), { precompress: true });
  assert.equal(readdirSync(dir).sort(), ['blobs', 'release', 'release.variants.pack']);
  assert.equal(filesUnder(release).sort(), Object.keys(files).sort());
  const blobs = filesUnder(store.dir);
  assert.is(blobs.length, 6, 'one blob a content: app.js and copy.js share theirs');
  assert.not.ok(
    blobs.some((b) => /\.(br|gz)$/.test(b)),
    blobs.join(),
  );
  assert.is(statSync(variantsPack(release)).mode & 0o777, 0o444, 'read-only');
  const offsets = new Set<number>();
  for (const path of ['app.js', 'style.css', 'big.js']) {
    const { br, gzip } = index.files[path]!;
    assert.ok(br && gzip, `${path} has both variants`);
    for (const v of [br, gzip]) {
      assert.is(v.path, 'release.variants.pack');
      assert.ok(v.size < files[path as keyof typeof files].length, path);
      offsets.add(v.offset!);
    }
    const at = { ...br, path: variantsPack(release) };
    assert.ok(brotliDecompressSync(slice(at)).equals(files[path as keyof typeof files]), `${path} brotli`);
    assert.ok(gunzipSync(slice({ ...gzip, path: variantsPack(release) })).equals(files[path as keyof typeof files]));
  }
  assert.is(offsets.size, 6, 'each variant in its own place');
  assert.equal(index.files['copy.js']!.br, index.files['app.js']!.br, 'same content, same variant');
  for (const path of ['small.html', 'logo.png', 'noise.txt'])
    assert.ok(!index.files[path]!.br && !index.files[path]!.gzip, `${path}: no variant`);
});

test('with a final root, the index names the pack where it will be; without precompress there is none', async () => {
  const { dir, store, release } = fresh();
  const index = await storeReleaseFiles(store, release, sourceOf({ 'app.js': files['app.js'] }), {
    precompress: true,
    finalRoot: join(dir, 'releases', 'abc'),
  });
  assert.is(index.files['app.js']!.br!.path, 'abc.variants.pack');
  const other = join(dir, 'node-release');
  await storeReleaseFiles(store, other, sourceOf({ 'app.js': files['app.js'] }), { precompress: false });
  assert.not.ok(existsSync(variantsPack(other)));
  assert.not.ok(existsSync(variantsDir(other)));
});

test('a store that fails leaves no release directory, no pack and no blob', async () => {
  const { dir, store, release } = fresh();
  const err = await storeReleaseFiles(store, release, sourceOf(files, new Error('the archive broke')), {
    precompress: true,
  }).catch((e: Error) => e);
  assert.is((err as Error).message, 'the archive broke');
  assert.equal(readdirSync(dir), ['blobs']);
  assert.equal(filesUnder(store.dir), []);
});

test('a pack already there is refused, and nothing is written', async () => {
  const { dir, store, release } = fresh();
  writeFileSync(variantsPack(release), 'someone else');
  const err = await storeReleaseFiles(store, release, sourceOf(files), { precompress: true }).catch((e) => e);
  assert.is((err as NodeJS.ErrnoException).code, 'EEXIST');
  assert.equal(readdirSync(dir), ['release.variants.pack']);
  assert.is(readFileSync(variantsPack(release), 'utf8'), 'someone else');
});

/** The bytes of each variant of a release, by path and encoding, read out of its pack. */
function variantBytes(release: string, index: Awaited<ReturnType<typeof storeReleaseFiles>>) {
  const out: Record<string, Buffer> = {};
  for (const [path, file] of Object.entries(index.files))
    for (const e of ['br', 'gzip'] as const)
      if (file[e]) out[`${path} ${e}`] = slice({ ...file[e], path: variantsPack(release) });
  return out;
}

test('a release of contents known copies their variants out of the old pack: none compressed again', async () => {
  const { store, release } = fresh();
  const memory = new KnownVariantsMemory();
  // Brotli at quality 1 in the first release, 5 in the next: bytes of quality 1 there were copied, not compressed.
  const first = await storeReleaseFiles(store, release, sourceOf(files), { precompress: true, brotliQuality: 1 });
  await memory.learn(first, variantsPack(release));
  const next = `${release}-2`;
  const index = await storeReleaseFiles(store, next, sourceOf(files), {
    precompress: true,
    known: (sha) => memory.get(sha),
  });
  const copied = variantBytes(next, index);
  assert.equal(Object.keys(copied).sort(), Object.keys(variantBytes(release, first)).sort());
  for (const [key, bytes] of Object.entries(variantBytes(release, first)))
    assert.ok(copied[key]!.equals(bytes), `${key}: the same bytes`);
  const fresh5 = await storeReleaseFiles(store, `${release}-3`, sourceOf({ 'app.js': files['app.js'] }), {
    precompress: true,
  });
  assert.not.ok(variantBytes(`${release}-3`, fresh5)['app.js br']!.equals(copied['app.js br']!), 'quality 1 kept');
  for (const path of ['noise.txt', 'logo.png', 'small.html']) assert.not.ok(index.files[path]!.br, path);
  // Its own offsets in its own pack, which stands alone once the first release is gone.
  assert.is(index.files['app.js']!.br!.path, 'release-2.variants.pack');
  rmSync(variantsPack(release), { force: true });
  rmSync(release, { recursive: true, force: true });
  for (const path of ['app.js', 'big.js']) {
    const br = slice({ ...index.files[path]!.br!, path: variantsPack(next) });
    assert.ok(brotliDecompressSync(br).equals(files[path as keyof typeof files]), path);
  }
});

test('a known pack that is gone, or another file now, is not read: the variants are compressed again', async () => {
  const { store, release } = fresh();
  const some = { 'app.js': files['app.js'], 'big.js': bigText };
  const first = await storeReleaseFiles(store, release, sourceOf(some), { precompress: true, brotliQuality: 1 });
  const memory = new KnownVariantsMemory();
  await memory.learn(first, variantsPack(release));
  const original = variantBytes(release, first);
  const known = { precompress: true, known: (sha: string) => memory.get(sha) };
  for (const [n, change] of [
    [2, () => rmSync(variantsPack(release))],
    // Same path and size, other bytes: another pack (another inode), never served as the one known.
    [3, () => writeFileSync(variantsPack(release), Buffer.alloc(original['app.js br']!.length * 9))],
  ] as const) {
    change();
    const next = `${release}-${n}`;
    const index = await storeReleaseFiles(store, next, sourceOf(some), known);
    const again = variantBytes(next, index);
    for (const path of Object.keys(some)) {
      assert.ok(index.files[path]!.br && index.files[path]!.gzip, `${n} ${path}`);
      assert.not.ok(again[`${path} br`]!.equals(original[`${path} br`]!), `${n} ${path}: compressed at quality 5`);
      const br = brotliDecompressSync(again[`${path} br`]!);
      assert.ok(br.equals(some[path as keyof typeof some]), `${n} ${path}`);
      assert.ok(gunzipSync(again[`${path} gzip`]!).equals(some[path as keyof typeof some]), `${n} ${path}`);
    }
  }
});

test('a content known not smaller gets no variant, and is not compressed', async () => {
  const { store, release } = fresh();
  const first = await storeReleaseFiles(store, release, sourceOf({ 'noise.txt': files['noise.txt'] }), {
    precompress: true,
  });
  const memory = new KnownVariantsMemory();
  await memory.learn(first, variantsPack(release));
  const sha = first.files['noise.txt']!.etag.slice(1, -1);
  assert.equal(memory.get(sha), { br: null, gzip: null });
  // Text that would compress, known not smaller: nothing made, so nothing compressed.
  const appSha = createHash('sha256').update(files['app.js']).digest('hex');
  const index = await storeReleaseFiles(store, `${release}-2`, sourceOf({ 'app.js': files['app.js'] }), {
    precompress: true,
    known: (s) => (s === appSha ? { br: null, gzip: null } : undefined),
  });
  assert.equal(Object.keys(index.files['app.js']!), ['size', 'type', 'etag', 'mtimeMs']);
  assert.is(statSync(variantsPack(`${release}-2`)).size, 0, 'nothing in its pack');
});

/** Gzip at level 1: other bytes than the variants' level 6, so a variant made of them shows it was not compressed. */
const fastGzip = (bytes: Buffer) => gzipSync(bytes, { level: 1 });

test("a source's ready gzip encoding is the gzip variant when smaller; else the file is compressed", async () => {
  const { store, release } = fresh();
  const index = await storeReleaseFiles(store, release, sourceOf(files, undefined, fastGzip), { precompress: true });
  const made = variantBytes(release, index);
  for (const path of ['app.js', 'style.css']) {
    const bytes = files[path as keyof typeof files];
    assert.ok(made[`${path} gzip`]!.equals(fastGzip(bytes)), `${path}: the ready bytes`);
    assert.ok(brotliDecompressSync(made[`${path} br`]!).equals(bytes), `${path}: brotli made as before`);
  }
  assert.ok(gunzipSync(made['big.js gzip']!).equals(bigText), 'a streamed file has none ready: compressed');
  // Level 0: stored blocks, larger than the file.
  const stored = (bytes: Buffer) => gzipSync(bytes, { level: 0 });
  const other = `${release}-2`;
  const again = await storeReleaseFiles(store, other, sourceOf({ 'app.js': files['app.js'] }, undefined, stored), {
    precompress: true,
  });
  const gzip = variantBytes(other, again)['app.js gzip']!;
  assert.ok(gzip.length < files['app.js'].length, 'compressed, not the larger ready one');
  assert.ok(gunzipSync(gzip).equals(files['app.js']));
});

test('without precompress, ready gzip encodings are kept for addReleaseVariants, which writes them as is', async () => {
  const { store, release } = fresh();
  const kept = new Map<string, Buffer>();
  const index = await storeReleaseFiles(store, release, sourceOf(files, undefined, fastGzip), {
    precompress: false,
    gzip: kept,
  });
  const sha = (path: string) => index.files[path]!.etag.slice(1, -1);
  // app.js and copy.js share one content; small.html is too small, logo.png not text, noise.txt not smaller, big.js
  // streamed: none of them.
  assert.equal([...kept.keys()].sort(), [sha('app.js'), sha('style.css')].sort());
  assert.ok(kept.get(sha('app.js'))!.equals(fastGzip(files['app.js'])));
  const redirects = [{ from: '/*', to: '/index.html', status: 200 as const, force: false }];
  const full = await addReleaseVariants(release, { ...index, variantsPending: 1, redirects }, { gzip: kept });
  assert.equal(full.redirects, redirects, "the index's redirects stay");
  assert.is(full.variantsPending, undefined, 'no longer pending');
  const made = variantBytes(release, full);
  for (const path of ['app.js', 'copy.js', 'style.css'])
    assert.ok(made[`${path} gzip`]!.equals(fastGzip(files[path as keyof typeof files])), `${path}: the ready bytes`);
  assert.ok(gunzipSync(made['big.js gzip']!).equals(bigText), 'the others compressed as before');
  assert.ok(brotliDecompressSync(made['app.js br']!).equals(files['app.js']));
});

test('a release keeps at most KEPT_GZIP_BYTES of ready gzip encodings in memory', async () => {
  const { store, release } = fresh();
  // 1 MB files of hex (about half that gzipped): more than the cap in all.
  const many: Record<string, Buffer> = {};
  for (let i = 0; i < Math.ceil((2 * KEPT_GZIP_BYTES) / (1024 * 1024)) + 2; i++)
    many[`chunk-${i}.js`] = Buffer.from(randomBytes(512 * 1024).toString('hex'));
  const kept = new Map<string, Buffer>();
  await storeReleaseFiles(store, release, sourceOf(many, undefined, fastGzip), { precompress: false, gzip: kept });
  const bytes = [...kept.values()].reduce((sum, b) => sum + b.length, 0);
  assert.ok(kept.size < Object.keys(many).length, `${kept.size} of ${Object.keys(many).length} kept`);
  assert.ok(bytes < KEPT_GZIP_BYTES + 1024 * 1024, `${bytes} bytes kept`);
  assert.ok(bytes >= KEPT_GZIP_BYTES, 'up to the cap');
});

test('the memory of variants forgets the least recently used contents beyond its cap', async () => {
  const { store, release } = fresh();
  const three = { 'a.js': text('a', 2000), 'b.js': text('b', 2000), 'c.js': text('c', 2000) };
  const index = await storeReleaseFiles(store, release, sourceOf(three), { precompress: true });
  const sha = (path: string) => index.files[path]!.etag.slice(1, -1);
  const memory = new KnownVariantsMemory(2);
  await memory.learn({ files: { 'a.js': index.files['a.js']!, 'b.js': index.files['b.js']! } }, variantsPack(release));
  assert.ok(memory.get(sha('a.js')), 'a is used: b is now the least recent');
  await memory.learn({ files: { 'c.js': index.files['c.js']! } }, variantsPack(release));
  assert.ok(memory.get(sha('a.js')));
  assert.is(memory.get(sha('b.js')), undefined);
  assert.is(memory.get(sha('c.js'))!.br!.size, index.files['c.js']!.br!.size);
});

test.after(() => rmSync(root, { recursive: true, force: true }));
test('unlinking a release takes its files and the blobs only it used, never a file outside it', async () => {
  const { dir, store, release } = fresh();
  const index = await storeReleaseFiles(store, release, sourceOf(files), { precompress: true });
  const other = join(dir, 'other');
  const kept = await storeReleaseFiles(store, other, sourceOf({ 'same.js': files['app.js'] }), { precompress: false });
  // An index naming a path outside its release (never written so; a damaged or doctored index) unlinks nothing there.
  writeFileSync(join(dir, 'outside.txt'), 'not the release');
  const doctored = { files: { ...index.files, '../outside.txt': index.files['app.js']! } };
  assert.equal(await unlinkReleaseFiles(store, release, doctored), []);
  assert.equal(filesUnder(release), [], 'every file of the release unlinked');
  assert.ok(existsSync(join(dir, 'outside.txt')));
  assert.equal(filesUnder(store.dir), [kept.files['same.js']!.etag.slice(1, -1).replace(/^(..)/, '$1/$1')]);
  assert.ok(readFileSync(join(other, 'same.js')).equals(files['app.js']), 'the blob another release links to stays');
});

test.run();
