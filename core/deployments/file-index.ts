import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { fileIndexPath, type FileIndex } from '../ports/file-index.js';

export type { FileIndex, FileVariant, IndexedFile } from '../ports/file-index.js';
export { fileIndexPath, variantsDir, variantsPack } from '../ports/file-index.js';

const MAX_CACHED = 2_000;
/** An absent index (a release deployed before indexes existed) is looked for again after this long. */
const ABSENT_TTL_MS = 5_000;

/**
 * How often an index whose variants are pending is read again, at most: every 25 ms for a minute, then every 5 s
 * (its deployer stopped while compressing, and makes them again once it is back).
 */
const PENDING_RECHECK_MS = 25;
const PENDING_SLOW_AFTER_MS = 60_000;
const PENDING_SLOW_RECHECK_MS = 5_000;

const cache = new Map<string, FileIndex>();
const absent = new Map<string, number>();
/** Releases whose held index is pending: when it may be read again. */
const recheck = new Map<string, number>();

/**
 * The file index of the static release at `root`, read once and kept in memory (the least recently
 * used are dropped past 2,000 releases), or null when the release has none (deployed before indexes
 * existed: serve it from the disk). Variant paths are absolute. An index whose variants are pending is
 * read again in the background (at most every 25 ms, every 5 s after a minute) until one without that mark
 * replaces it.
 */
export async function fileIndexOf(root: string): Promise<FileIndex | null> {
  const hit = cache.get(root);
  if (hit) {
    cache.delete(root);
    cache.set(root, hit);
    if (hit.variantsPending !== undefined) readAgain(root, hit);
    return hit;
  }
  const missedAt = absent.get(root);
  if (missedAt !== undefined && Date.now() - missedAt < ABSENT_TTL_MS) return null;
  const index = await loadFileIndex(root);
  if (!index) {
    absent.set(root, Date.now());
    if (absent.size > MAX_CACHED) absent.delete(absent.keys().next().value!);
    return null;
  }
  absent.delete(root);
  hold(root, index);
  return index;
}

function hold(root: string, index: FileIndex): void {
  cache.set(root, index);
  // A pending index read again keeps the time readAgain set (every 5 s after a minute, not every 25 ms).
  if (index.variantsPending === undefined) recheck.delete(root);
  else if (!recheck.has(root)) recheck.set(root, Date.now() + PENDING_RECHECK_MS);
  if (cache.size > MAX_CACHED) {
    const oldest = cache.keys().next().value!;
    cache.delete(oldest);
    recheck.delete(oldest);
  }
}

/**
 * Reads the held index of `root` again in the background when its variants are pending and it was not read
 * lately (the edge serves from the held one meanwhile).
 */
function readAgain(root: string, held: FileIndex): void {
  const at = recheck.get(root);
  const now = Date.now();
  if (at === undefined || now < at) return;
  const slow = now - held.variantsPending! > PENDING_SLOW_AFTER_MS;
  recheck.set(root, now + (slow ? PENDING_SLOW_RECHECK_MS : PENDING_RECHECK_MS));
  loadFileIndex(root).then(
    (index) => {
      // Only the same release, still held: one forgotten (removed) meanwhile is not brought back.
      if (index && cache.get(root) === held) hold(root, index);
    },
    () => {},
  );
}

/**
 * The index of the release at `root` when this process holds it already (no disk, no promise: the
 * edge's hot path), null when it is known to be absent, undefined when it was not read yet.
 */
export function heldFileIndex(root: string): FileIndex | null | undefined {
  const hit = cache.get(root);
  if (hit) {
    if (hit.variantsPending !== undefined) readAgain(root, hit);
    return hit;
  }
  const missedAt = absent.get(root);
  return missedAt !== undefined && Date.now() - missedAt < ABSENT_TTL_MS ? null : undefined;
}

/** Drops what this process holds of the release at `root` (after it is removed). */
export function forgetFileIndex(root: string): void {
  cache.delete(root);
  absent.delete(root);
  recheck.delete(root);
}

/**
 * Reads the index of the release at `root`, synchronously: once per release and process, its parse costs more than
 * the read, and through the libuv pool the first answer of a new release waited behind the compression of its
 * variants (bench/upload-to-live.ts).
 */
async function loadFileIndex(root: string): Promise<FileIndex | null> {
  let text: string;
  try {
    text = readFileSync(fileIndexPath(root), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const index = JSON.parse(text) as FileIndex;
  const base = dirname(root);
  // Every variant of a release names its one pack: one string for all of them.
  const absolute = new Map<string, string>();
  for (const file of Object.values(index.files))
    for (const variant of [file.br, file.gzip]) {
      if (!variant || isAbsolute(variant.path)) continue;
      let path = absolute.get(variant.path);
      if (path === undefined) absolute.set(variant.path, (path = join(base, variant.path)));
      variant.path = path;
    }
  return index;
}
