import { createReadStream, createWriteStream, readFileSync, unlinkSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { lstat, mkdir, readFile, realpath, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, resolve, sep } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { brotliCompress, constants, createBrotliCompress, createGzip, gzip } from 'node:zlib';
import { mime } from '@fastify/send';
import type { FileIndex, FileVariant, IndexedFile } from '../../../core/ports/file-index.js';
import { fileIndexPath, variantsPack } from '../../../core/ports/file-index.js';
import type { ArchiveContent } from '../../../core/ports/archive.js';
import { atMost } from '../../../core/plugin.js';
import { blobName, inTurns, lstatOrNull, type BlobStore } from './blob-store.js';
import { VariantPack, type KnownVariants, type PackedVariant } from './variant-pack.js';

/** Files smaller than this are not precompressed (the headers would eat the gain). */
export const COMPRESS_MIN_BYTES = 1024;
/**
 * Brotli quality of the precompressed variants: 5 is about as dense as `gzip -9` on text and cheap; from 9 on
 * brotli gets an order of magnitude slower for a few percent (bench/release-store.ts).
 */
export const BROTLI_QUALITY = 5;
/**
 * Gzip level of the precompressed variants: on JavaScript, 6 (gzip's own default) is within 0.2% of 9's size for
 * 60% of its CPU (bench/release-store.ts).
 */
export const GZIP_LEVEL = 6;
/**
 * How many bytes of gzip variants storeReleaseFiles keeps in memory for a release (`gzip`), made of the archive's
 * own deflate streams, until addReleaseVariants writes them: the rest are compressed there.
 */
export const KEPT_GZIP_BYTES = 8 * 1024 * 1024;
/** How many files are written, hashed or compressed at once (zlib and the disk calls run in the libuv pool). */
const PARALLEL = 8;
/**
 * How many files addReleaseVariants compresses at once: two zlib jobs each, so the libuv pool (4 threads) keeps room
 * for the file reads of the edge and the next deploy while a live release gets its variants in the background (with
 * 8, the first answer of a new release waited about 5 ms more behind them, bench/upload-to-live.ts).
 */
const BACKGROUND_PARALLEL = 2;

const COMPRESSIBLE = new RegExp(
  '^(text/|application/(javascript|json|xml|wasm|manifest\\+json|ld\\+json|rss\\+xml|atom\\+xml|xhtml\\+xml)$|' +
    'image/(svg\\+xml|x-icon|vnd\\.microsoft\\.icon|bmp)$|font/(ttf|otf)$|application/vnd\\.ms-fontobject$)',
);
const UTF8 = /^(text\/|application\/(javascript|json)$)/;

/** The Content-Type header of a file, by its name (`; charset=utf-8` for text, as the edge sends it). */
export function contentTypeOf(path: string): string {
  const type = mime.getType(path) ?? 'application/octet-stream';
  return UTF8.test(type) ? `${type}; charset=utf-8` : type;
}

/** Whether a file of this Content-Type gains from compression. */
export function compressible(type: string): boolean {
  return COMPRESSIBLE.test(type.split(';', 1)[0]!.trim());
}

/** Hands each file of a release to `fn`, one at a time (Archive.each on the release's artifact). */
export type ReleaseFileSource = (fn: (file: ArchiveContent) => Promise<void>) => Promise<void>;

/**
 * Writes every file `source` gives into the release directory `root` (created; it must not exist), each file a
 * link to its blob in the store (its bytes written once, into the release, when the blob is new), and returns the
 * release's index: sizes, types, strong ETags from the SHA-256, and, with `precompress` (static releases), brotli
 * and gzip variants of compressible files of 1 KB or more, kept only when smaller, appended to the release's one
 * pack `variantsPack(root)` as they are made (files of the same content share theirs; the index names the pack
 * relative to the folder holding `finalRoot`, where the release will be, `root` by default). The variants `known`
 * gives for a content are copied out of the pack holding them instead (none when it knows they were not smaller;
 * compressed after all when that pack is gone or another one). Each file is read
 * out of the source once: a small one is hashed, written and compressed from memory while the next ones are read
 * (up to PARALLEL at once: file creation waits on the disk); a large one is written as it streams by, then read
 * back for its variants. A gzip encoding the source has ready (ArchiveContent.gzip) is the gzip variant when it is
 * smaller; without `precompress`, such variants are put in `gzip` (by SHA-256, up to KEPT_GZIP_BYTES in all) for
 * addReleaseVariants. A failure leaves no release directory, no pack, and no blob that only it made.
 */
export async function storeReleaseFiles(
  store: BlobStore,
  root: string,
  source: ReleaseFileSource,
  opts: {
    precompress: boolean;
    signal?: AbortSignal;
    finalRoot?: string;
    brotliQuality?: number;
    known?: (sha256: string) => KnownVariants | undefined;
    gzip?: Map<string, Buffer>;
  },
): Promise<FileIndex> {
  const found = new Map<string, IndexedFile>();
  const packPath = variantsPack(root);
  const named = basename(variantsPack(opts.finalRoot ?? root));
  const quality = opts.brotliQuality ?? BROTLI_QUALITY;
  await mkdir(root, { recursive: false });
  // Files are made under the real path, as extraction makes them: whatever lies outside is never followed again.
  const base = await realpath(root);
  const pack = opts.precompress ? await VariantPack.create(packPath).catch(failedIn(root)) : null;
  const dirs = new Set([base]);
  const pending = new Set<Promise<void>>();
  /** The blobs this release's files are, or may have become, as far as it came. */
  const touched = new Set<string>();
  const compressed = new Map<string, Promise<[FileVariant | undefined, FileVariant | undefined]>>();
  const failures: unknown[] = [];
  let keptGzip = 0;
  /** Keeps the ready gzip variant of the file whose content is `sha` for addReleaseVariants, when smaller and room. */
  const keepGzip = (sha: string, file: ArchiveContent) => {
    if (!opts.gzip || opts.gzip.has(sha) || keptGzip >= KEPT_GZIP_BYTES) return;
    const gzip = file.gzip!();
    if (gzip.length >= file.size) return;
    opts.gzip.set(sha, gzip);
    keptGzip += gzip.length;
  };
  const later = (work: Promise<void>) => {
    const done: Promise<void> = work.catch((err) => void failures.push(err)).finally(() => pending.delete(done));
    pending.add(done);
  };
  try {
    await source(async (file) => {
      opts.signal?.throwIfAborted();
      if (failures.length) throw failures[0];
      const target = resolve(base, file.path);
      if (!target.startsWith(base + sep)) throw new Error(`release file ${file.path} is outside the release`);
      const parent = dirname(target);
      if (!dirs.has(parent)) dirs.add((await mkdir(parent, { recursive: true }), parent));
      const entry: IndexedFile = { size: file.size, type: contentTypeOf(file.path), etag: '', mtimeMs: 0 };
      found.set(file.path, entry);
      const variants = file.size >= COMPRESS_MIN_BYTES && compressible(entry.type);
      // A large file is written as it streams by; a small one, and the variants, while the next files are read.
      const stored = file.data ? undefined : await writeStream(store, target, file, touched);
      later(
        (async () => {
          const sha = stored?.sha ?? createHash('sha256').update(file.data!).digest('hex');
          entry.etag = `"${sha}"`;
          touched.add(blobName(sha, file.executable));
          entry.mtimeMs = stored?.mtimeMs ?? (await store.put(blobName(sha, file.executable), target, file.data!));
          if (!variants) return;
          if (!opts.precompress) {
            if (file.gzip) keepGzip(sha, file);
            return;
          }
          // Files of the same content share their variants: made once.
          const from = { file: target, data: file.data ?? null, size: file.size, quality, gzip: file.gzip };
          let made = compressed.get(sha);
          if (!made) {
            const known = opts.known?.(sha);
            made = Promise.all([
              variant(pack!, 'br', from, named, known?.br),
              variant(pack!, 'gzip', from, named, known?.gzip),
            ]);
            compressed.set(sha, made);
          }
          const [br, gzip] = await made;
          if (br) entry.br = br;
          if (gzip) entry.gzip = gzip;
        })(),
      );
      if (pending.size >= PARALLEL) await Promise.race(pending);
    });
  } catch (err) {
    failures.unshift(err);
  } finally {
    await Promise.all(pending);
    await pack?.close().catch((err) => void failures.push(err));
  }
  if (failures.length) {
    // Nothing of a release that failed stays: its files and pack, then the blobs no other release links to.
    for (const path of [root, packPath]) await rm(path, { recursive: true, force: true });
    await store.release(touched);
    throw failures[0];
  }
  // In path order whatever order the files came in: the same release gives the same index.
  const files: Record<string, IndexedFile> = {};
  for (const path of [...found.keys()].sort()) files[path] = found.get(path)!;
  return { files };
}

/**
 * Adds to the index of the release in place at `root` the brotli and gzip variants of its compressible files of 1
 * KB or more that storeReleaseFiles left out (`precompress: false`), read from the release's own files: written to
 * its pack `variantsPack(root)` (made here; it must not exist), copied out of another pack where `known` says
 * (as storeReleaseFiles does); the gzip variants in `gzip` (storeReleaseFiles') are written as they are. Resolves
 * to the index with them, without `variantsPending`; the caller saves it. A failure, or `signal` aborting, removes
 * the pack.
 */
export async function addReleaseVariants(
  root: string,
  index: FileIndex,
  opts: {
    signal?: AbortSignal;
    brotliQuality?: number;
    known?: (sha256: string) => KnownVariants | undefined;
    gzip?: ReadonlyMap<string, Buffer>;
  },
): Promise<FileIndex> {
  const packPath = variantsPack(root);
  const named = basename(packPath);
  const quality = opts.brotliQuality ?? BROTLI_QUALITY;
  const base = resolve(root);
  const pack = await VariantPack.create(packPath);
  const files: Record<string, IndexedFile> = {};
  const compressed = new Map<string, Promise<[FileVariant | undefined, FileVariant | undefined]>>();
  try {
    await atMost(BACKGROUND_PARALLEL, Object.entries(index.files), async ([path, entry]) => {
      const plain: IndexedFile = { size: entry.size, type: entry.type, etag: entry.etag, mtimeMs: entry.mtimeMs };
      files[path] = plain;
      if (entry.size < COMPRESS_MIN_BYTES || !compressible(entry.type)) return;
      opts.signal?.throwIfAborted();
      const file = resolve(base, path);
      if (!file.startsWith(base + sep)) return;
      const sha = entry.etag.slice(1, -1);
      let made = compressed.get(sha);
      if (!made) {
        const known = opts.known?.(sha);
        made = (async () => {
          // The release's own files, just written: in the page cache, read at once.
          const data = entry.size <= IN_MEMORY_BYTES ? readFileSync(file) : null;
          const gzip = opts.gzip?.get(sha);
          const from = { file, data, size: entry.size, quality, gzip: gzip && (() => gzip) };
          return Promise.all([
            variant(pack, 'br', from, named, known?.br),
            variant(pack, 'gzip', from, named, known?.gzip),
          ]);
        })();
        compressed.set(sha, made);
      }
      const [br, gzip] = await made;
      if (br) plain.br = br;
      if (gzip) plain.gzip = gzip;
    });
    await pack.close();
  } catch (err) {
    await pack.close().catch(() => {});
    await rm(packPath, { force: true });
    throw err;
  }
  const sorted: Record<string, IndexedFile> = {};
  for (const path of Object.keys(index.files)) sorted[path] = files[path]!;
  // What else the index says (its redirects) stays; the variants are no longer pending.
  const { variantsPending: _, ...rest } = index;
  return { ...rest, files: sorted };
}

/** Files up to this size are compressed from memory by addReleaseVariants; larger ones as a stream. */
const IN_MEMORY_BYTES = 1024 * 1024;

/** Writes a large file as it streams by (read-only from the start), makes it its blob, and returns its SHA-256. */
async function writeStream(
  store: BlobStore,
  target: string,
  file: ArchiveContent,
  touched: Set<string>,
): Promise<{ sha: string; mtimeMs: number }> {
  const hash = createHash('sha256');
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  await pipeline(file.stream!, tap, createWriteStream(target, { flags: 'wx', mode: file.executable ? 0o555 : 0o444 }));
  const sha = hash.digest('hex');
  touched.add(blobName(sha, file.executable));
  await store.adopt(target, blobName(sha, file.executable));
  return { sha, mtimeMs: (await lstat(target)).mtimeMs };
}

/**
 * Writes the index of the release that will be at `root` beside it, through a temporary name so that a reader
 * never sees half of it.
 */
export async function saveFileIndex(root: string, index: FileIndex): Promise<void> {
  const path = fileIndexPath(root);
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, JSON.stringify(index));
  await rename(temp, path);
}

/** The index stored beside the release at `root` as written (variant paths relative), or null when none. */
export async function readFileIndex(root: string): Promise<FileIndex | null> {
  const text = await readFile(fileIndexPath(root), 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null;
    throw err;
  });
  return text === null ? null : (JSON.parse(text) as FileIndex);
}

/**
 * Unlinks the files of the release at `root` that its index names, each with its blob when nothing else links to
 * it any more (BlobStore.release), with synchronous calls in turns (see inTurns): one walk, where naming the blobs,
 * removing the directory and releasing them took three. The folders, and whatever the index does not name, are left
 * for the caller to remove. Resolves to the blobs of the variants of a release stored before variant packs
 * (`<sha256>.br`), to release once the folder linking them is gone.
 */
export async function unlinkReleaseFiles(store: BlobStore, root: string, index: FileIndex): Promise<string[]> {
  const base = resolve(root);
  const variants: string[] = [];
  const blobs: string[] = [];
  try {
    await inTurns(Object.entries(index.files), ([path, file]) => {
      for (const v of [file.br, file.gzip]) if (v && v.offset === undefined) variants.push(basename(v.path));
      const target = resolve(base, path);
      if (!target.startsWith(base + sep)) return;
      const st = lstatOrNull(target);
      if (!st?.isFile()) return;
      unlinkSync(target);
      blobs.push(blobName(file.etag.slice(1, -1), (st.mode & 0o111) !== 0));
    });
  } finally {
    await store.release(blobs);
  }
  return variants;
}

/** Removes the release directory made for a store that could not start, and rethrows why. */
const failedIn = (root: string) => async (err: unknown) => {
  await rm(root, { recursive: true, force: true });
  throw err;
};

/**
 * The variant of a file in `encoding`, appended to `pack` when smaller than the file; undefined when not. `known`:
 * where it is already (copied from there when that pack is still the same), or null when known not smaller. The
 * source's ready gzip encoding, when smaller, is the gzip variant.
 */
async function variant(
  pack: VariantPack,
  encoding: Encoding,
  source: { file: string; data: Buffer | null; size: number; quality: number; gzip?: () => Buffer },
  path: string,
  known?: PackedVariant | null,
): Promise<FileVariant | undefined> {
  if (known === null) return undefined;
  const ready = encoding === 'gzip' ? source.gzip?.() : undefined;
  if (ready && ready.length < source.size) return { path, size: ready.length, offset: await pack.append(ready) };
  // A pack that cannot be read as it was known is no reason to fail: the variant is made again.
  const copied = known ? await pack.copy(known).catch(() => null) : null;
  if (copied !== null) return { path, size: known!.size, offset: copied };
  const { file, data, size, quality } = source;
  if (data) {
    const compressed = await compressBuffer(encoding, data, quality);
    if (compressed.length >= size) return undefined;
    return { path, size: compressed.length, offset: await pack.append(compressed) };
  }
  const kept = await pack.appendBelow(size, createReadStream(file), compressStream(encoding, size, quality));
  return kept ? { path, ...kept } : undefined;
}

type Encoding = 'br' | 'gzip';

/**
 * Brotli's window (its size less 16 bytes) fitted to the file, no smaller than brotli's least (1 KB) and no larger
 * than its default (4 MB): a larger one finds nothing more in a smaller file, but costs its allocation on every
 * call (about half of the CPU of compressing a 20 KB file).
 */
const brotliWindow = (size: number) =>
  Math.min(
    constants.BROTLI_DEFAULT_WINDOW,
    Math.max(constants.BROTLI_MIN_WINDOW_BITS, Math.ceil(Math.log2(size + 16))),
  );

const brotliOptions = (size: number, quality: number) => ({
  params: {
    [constants.BROTLI_PARAM_QUALITY]: quality,
    [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
    [constants.BROTLI_PARAM_SIZE_HINT]: size,
    [constants.BROTLI_PARAM_LGWIN]: brotliWindow(size),
  },
});
const brotliAsync = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

function compressBuffer(encoding: Encoding, data: Buffer, quality: number): Promise<Buffer> {
  return encoding === 'gzip'
    ? gzipAsync(data, { level: GZIP_LEVEL })
    : brotliAsync(data, brotliOptions(data.length, quality));
}

function compressStream(encoding: Encoding, size: number, quality: number) {
  return encoding === 'gzip' ? createGzip({ level: GZIP_LEVEL }) : createBrotliCompress(brotliOptions(size, quality));
}
