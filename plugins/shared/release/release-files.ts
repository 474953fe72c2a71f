import { createReadStream, createWriteStream } from 'node:fs';
import { createHash } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { basename, join, relative, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { brotliCompress, constants, createBrotliCompress, createGzip, gzip } from 'node:zlib';
import { mime } from '@fastify/send';
import type { FileIndex, FileVariant, IndexedFile } from '../../../core/ports/file-index.js';
import { fileIndexPath, variantsDir } from '../../../core/ports/file-index.js';
import { blobName, sha256Of, type BlobStore } from './blob-store.js';

/** Files smaller than this are not precompressed (the headers would eat the gain). */
export const COMPRESS_MIN_BYTES = 1024;
/**
 * Brotli quality of the precompressed variants: 5 is about as dense as `gzip -9` on text and cheap; from 9 on
 * brotli gets an order of magnitude slower for a few percent (bench/release-store.ts).
 */
export const BROTLI_QUALITY = 5;
/** Gzip level of the precompressed variants, as `gzip -9` makes them for nginx's gzip_static. */
export const GZIP_LEVEL = 9;
/** Files up to this size are read into memory once (hashed and compressed from there); larger ones are streamed. */
const IN_MEMORY_BYTES = 4 * 1024 * 1024;
/** How many files are hashed or compressed at once (zlib runs in the libuv pool). */
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

/**
 * Moves every file of the unpacked release at `root` into the store (each becomes a link to its blob) and
 * returns its index: sizes, types, strong ETags from the SHA-256, and, with `precompress` (static releases),
 * brotli and gzip variants of compressible files of 1 KB or more, kept only when smaller, stored as blobs too and
 * linked under `variantsDir(root)` (the index names them relative to the folder holding `finalRoot`, where the
 * release will be, `root` by default).
 */
export async function storeReleaseFiles(
  store: BlobStore,
  root: string,
  opts: { precompress: boolean; signal?: AbortSignal; finalRoot?: string; brotliQuality?: number },
): Promise<FileIndex> {
  const paths = await filesUnder(root);
  const found = new Map<string, IndexedFile>();
  const variants = variantsDir(root);
  if (opts.precompress) await mkdir(variants, { recursive: true });
  await eachLimited(paths, async (path) => {
    opts.signal?.throwIfAborted();
    const file = join(root, path);
    const before = await lstat(file);
    // Small files are read once, then hashed and compressed from memory; larger ones are streamed.
    const data = before.size <= IN_MEMORY_BYTES ? await readFile(file) : null;
    const sha = data ? createHash('sha256').update(data).digest('hex') : await sha256Of(file);
    await store.adopt(file, blobName(sha, (before.mode & 0o111) !== 0));
    const { size, mtimeMs } = await lstat(file);
    const entry: IndexedFile = { size, type: contentTypeOf(path), etag: `"${sha}"`, mtimeMs };
    if (opts.precompress && size >= COMPRESS_MIN_BYTES && compressible(entry.type)) {
      const dir = basename(variantsDir(opts.finalRoot ?? root));
      const quality = opts.brotliQuality ?? BROTLI_QUALITY;
      const source = { file, data, size, quality };
      [entry.br, entry.gzip] = await Promise.all([
        variant(store, sha, '.br', source, join(variants, `${sha}.br`), dir),
        variant(store, sha, '.gz', source, join(variants, `${sha}.gz`), dir),
      ]);
    }
    found.set(path, entry);
  });
  // In path order whatever order the files were done in: the same release gives the same index.
  const files: Record<string, IndexedFile> = {};
  for (const path of paths) files[path.split(sep).join('/')] = found.get(path)!;
  return { files };
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
  const write = async (temp: string) => {
    if (data) return writeFile(temp, await compressBuffer(ext, data, quality), { flag: 'wx' });
    await pipeline(
      createReadStream(file),
      compressStream(ext, size, quality),
      createWriteStream(temp, { flags: 'wx' }),
    );
  };
  // Linked under the release's variants folder; when the blob is there, it is not compressed again.
  const kept = await store.add(blobName(sha, false, ext), target, write, (compressed) => compressed < size);
  return kept === null ? undefined : { path: `${dir}/${basename(target)}`, size: kept };
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

/** Every regular file under `root`, relative to it; anything else (a link, a device) is refused. */
async function filesUnder(root: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    const full = join(entry.parentPath, entry.name);
    if (entry.isDirectory()) continue;
    if (!entry.isFile()) throw new Error(`release file ${relative(root, full)} is not a regular file`);
    out.push(relative(root, full));
  }
  return out.sort();
}

async function eachLimited<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, lane));
}
