import { createReadStream, createWriteStream } from 'node:fs';
import { createHash } from 'node:crypto';
import { lstat, mkdir, readFile, realpath, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { brotliCompress, constants, createBrotliCompress, createGzip, gzip } from 'node:zlib';
import { mime } from '@fastify/send';
import type { FileIndex, FileVariant, IndexedFile } from '../../../core/ports/file-index.js';
import { fileIndexPath, variantsDir } from '../../../core/ports/file-index.js';
import type { ArchiveContent } from '../../../core/ports/archive.js';
import { blobName, type BlobStore } from './blob-store.js';

/** Files smaller than this are not precompressed (the headers would eat the gain). */
export const COMPRESS_MIN_BYTES = 1024;
/**
 * Brotli quality of the precompressed variants: 5 is about as dense as `gzip -9` on text and cheap; from 9 on
 * brotli gets an order of magnitude slower for a few percent (bench/release-store.ts).
 */
export const BROTLI_QUALITY = 5;
/** Gzip level of the precompressed variants, as `gzip -9` makes them for nginx's gzip_static. */
export const GZIP_LEVEL = 9;
/** How many files are written, hashed or compressed at once (zlib and the disk calls run in the libuv pool). */
const PARALLEL = 8;

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
 * and gzip variants of compressible files of 1 KB or more, kept only when smaller, stored as blobs too and linked
 * under `variantsDir(root)` (the index names them relative to the folder holding `finalRoot`, where the release
 * will be, `root` by default). Each file is read out of the source once: a small one is hashed, written and
 * compressed from memory while the next ones are read (up to PARALLEL at once: file creation waits on the disk);
 * a large one is written as it streams by, then read back for its variants.
 */
export async function storeReleaseFiles(
  store: BlobStore,
  root: string,
  source: ReleaseFileSource,
  opts: { precompress: boolean; signal?: AbortSignal; finalRoot?: string; brotliQuality?: number },
): Promise<FileIndex> {
  const found = new Map<string, IndexedFile>();
  const variantRoot = variantsDir(root);
  const dir = basename(variantsDir(opts.finalRoot ?? root));
  const quality = opts.brotliQuality ?? BROTLI_QUALITY;
  await mkdir(root, { recursive: false });
  if (opts.precompress) await mkdir(variantRoot);
  // Files are made under the real path, as extraction makes them: whatever lies outside is never followed again.
  const base = await realpath(root);
  const dirs = new Set([base]);
  const pending = new Set<Promise<void>>();
  /** The blobs this release's files are, or may have become, as far as it came. */
  const touched = new Set<string>();
  const compressed = new Map<string, Promise<[FileVariant | undefined, FileVariant | undefined]>>();
  const failures: unknown[] = [];
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
      const variants = opts.precompress && file.size >= COMPRESS_MIN_BYTES && compressible(entry.type);
      // A large file is written as it streams by; a small one, and the variants, while the next files are read.
      const stored = file.data ? undefined : await writeStream(store, target, file, touched);
      later(
        (async () => {
          const sha = stored?.sha ?? createHash('sha256').update(file.data!).digest('hex');
          entry.etag = `"${sha}"`;
          touched.add(blobName(sha, file.executable));
          entry.mtimeMs = stored?.mtimeMs ?? (await store.put(blobName(sha, file.executable), target, file.data!));
          if (!variants) return;
          // Files of the same content share their variants' links: made once.
          const from = { file: target, data: file.data ?? null, size: file.size, quality };
          let made = compressed.get(sha);
          if (!made)
            compressed.set(
              sha,
              (made = Promise.all([
                variant(store, sha, '.br', from, join(variantRoot, `${sha}.br`), dir),
                variant(store, sha, '.gz', from, join(variantRoot, `${sha}.gz`), dir),
              ])),
            );
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
  }
  if (failures.length) {
    // Nothing of a release that failed stays: its files, then the blobs no other release links to.
    const names = [...touched].flatMap((name) => [
      name,
      ...['.br', '.gz'].map((v) => blobName(name.slice(0, 64), false, v)),
    ]);
    for (const path of [root, variantRoot]) await rm(path, { recursive: true, force: true });
    await store.release(names);
    throw failures[0];
  }
  // In path order whatever order the files came in: the same release gives the same index.
  const files: Record<string, IndexedFile> = {};
  for (const path of [...found.keys()].sort()) files[path] = found.get(path)!;
  return { files };
}

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

/** The names of the blobs a release links to, from its index and the modes of its files (for BlobStore.release). */
export async function blobsOf(root: string, index: FileIndex): Promise<string[]> {
  const names: string[] = [];
  for (const [path, file] of Object.entries(index.files)) {
    const st = await lstat(join(root, path)).catch(() => null);
    if (st) names.push(blobName(file.etag.slice(1, -1), (st.mode & 0o111) !== 0));
    for (const v of [file.br, file.gzip]) if (v) names.push(basename(v.path));
  }
  return names;
}

async function variant(
  store: BlobStore,
  sha: string,
  ext: '.br' | '.gz',
  source: { file: string; data: Buffer | null; size: number; quality: number },
  target: string,
  dir: string,
): Promise<FileVariant | undefined> {
  const { file, data, size, quality } = source;
  const name = blobName(sha, false, ext);
  const path = `${dir}/${basename(target)}`;
  // Linked under the release's variants folder; when the blob is there, it is not compressed again.
  const linked = await store.link(name, target);
  if (linked) return { path, size: linked.size };
  if (data) {
    const compressed = await compressBuffer(ext, data, quality);
    if (compressed.length >= size) return undefined;
    await store.put(name, target, compressed);
    return { path, size: compressed.length };
  }
  const write = (temp: string) =>
    pipeline(createReadStream(file), compressStream(ext, size, quality), createWriteStream(temp, { flags: 'wx' }));
  const kept = await store.add(name, target, write, (compressed) => compressed < size);
  return kept === null ? undefined : { path, size: kept };
}

const brotliOptions = (size: number, quality: number) => ({
  params: {
    [constants.BROTLI_PARAM_QUALITY]: quality,
    [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
    [constants.BROTLI_PARAM_SIZE_HINT]: size,
  },
});
const brotliAsync = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

function compressBuffer(ext: '.br' | '.gz', data: Buffer, quality: number): Promise<Buffer> {
  return ext === '.gz'
    ? gzipAsync(data, { level: GZIP_LEVEL })
    : brotliAsync(data, brotliOptions(data.length, quality));
}

function compressStream(ext: '.br' | '.gz', size: number, quality: number) {
  return ext === '.gz' ? createGzip({ level: GZIP_LEVEL }) : createBrotliCompress(brotliOptions(size, quality));
}
