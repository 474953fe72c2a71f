import { lstat, mkdir, opendir, readdir, rename, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../tokens.js';
import { removeTree } from './remove-tree.js';

/** What became of a build's cache when it ended: kept for the account's next build, or dropped (and why). */
export type CacheReturn =
  { kept: true; bytes: number } | { kept: false; why: 'too_large' | 'not_plain_files' | 'newer_kept'; bytes?: number };

/** More entries than this and a cache is dropped, whatever its size: each one costs a walk when it is checked. */
export const MAX_ENTRIES = 100_000;

/**
 * The least one entry (a file, a folder...) counts for, in bytes: a block. Each takes an inode (a folder a block too):
 * counted by their length alone, 100,000 empty folders were kept as a cache of 0 bytes (400 MB of disk).
 */
export const ENTRY_BYTES = 4096;

/**
 * The folders builders keep between the builds of one account (a package manager's download cache), under
 * `<dataDir>/build-cache/<accountId>`. A build takes its account's folder for its duration (a rename into the build's
 * own folder: a build of the same account that starts meanwhile gets an empty one) and gives it back at its end.
 * Tenant code writes it, so it goes back only when it holds nothing but folders and regular files, within
 * `maxBytes` (each entry counting for at least ENTRY_BYTES) and MAX_ENTRIES; else, or when another build of the
 * account gave one back first, it is removed (removeTree: tenant code may have made it deep or unreadable). Only
 * that account's builds ever see it. A crash leaves it in the build's folder, which the workspace sweep removes.
 */
export class BuildCaches {
  constructor(
    private readonly dataDir: string,
    /** The most a cache may hold, in bytes. */
    readonly maxBytes: number,
    /** Where a cache that could not be removed is reported (stderr without). */
    private readonly log?: Pick<Logger, 'warn'>,
  ) {}

  /**
   * Moves account `accountId`'s cache to `into` (a path in the build's own folder, not there yet), or makes an empty
   * folder there when the account has none, or none free. Resolves whether the folder holds an earlier build's cache.
   */
  async take(accountId: string, into: string): Promise<boolean> {
    const path = this.pathOf(accountId);
    try {
      await rename(path, into);
      return true;
    } catch {
      // None yet, taken by a build of the account that runs now, or elsewhere on disk (another file system).
      await mkdir(into, { mode: 0o700 });
      return false;
    }
  }

  /** Removes account `accountId`'s cache (one a build holds now is not touched: it goes back at that build's end). */
  async clear(accountId: string): Promise<void> {
    await removeTree(this.pathOf(accountId));
  }

  /** Gives the cache at `from` back to account `accountId` when it qualifies (see the class), else removes it. */
  async giveBack(accountId: string, from: string): Promise<CacheReturn> {
    const size = await plainSize(from, this.maxBytes);
    let result: CacheReturn;
    if (size === 'not_plain_files' || size === 'too_large') result = { kept: false, why: size };
    else {
      await mkdir(join(this.dataDir, 'build-cache'), { recursive: true, mode: 0o700 });
      // A rename onto a folder that is there and not empty fails: the cache another build gave back first stays.
      result = await rename(from, this.pathOf(accountId)).then(
        (): CacheReturn => ({ kept: true, bytes: size }),
        (): CacheReturn => ({ kept: false, why: 'newer_kept', bytes: size }),
      );
      // Its time is when it was last given back: sweep() goes by it.
      if (result.kept) await utimes(this.pathOf(accountId), new Date(), new Date()).catch(() => {});
    }
    // Tenant code wrote it: it may be deeper than PATH_MAX, or unreadable (removeTree copes).
    if (!result.kept) await removeTree(from);
    return result;
  }

  /**
   * Removes the caches no build gave back for `olderThanMs` (an account that stopped building; any number of workers
   * may sweep at once). A cache a build holds now is in that build's folder, not here. One that cannot be removed is
   * reported and left for the next sweep. Resolves how many it removed.
   */
  async sweep(olderThanMs: number): Promise<number> {
    const root = join(this.dataDir, 'build-cache');
    let removed = 0;
    for (const name of await readdir(root).catch(() => [])) {
      const info = await lstat(join(root, name)).catch(() => null);
      if (!info || Date.now() - info.mtimeMs <= olderThanMs) continue;
      const path = join(root, name);
      const what = 'a build cache was not removed; the next sweep tries again';
      const gone = await removeTree(path).then(
        () => true,
        (err: unknown) => {
          if (this.log) this.log.warn({ err, path }, what);
          else console.warn(`hoist: ${what}: ${err instanceof Error ? err.message : String(err)}`);
          return false;
        },
      );
      if (gone) removed++;
    }
    return removed;
  }

  private pathOf(accountId: string): string {
    if (!/^[\w-]{1,64}$/.test(accountId)) throw new Error(`not an account id: ${JSON.stringify(accountId)}`);
    return join(this.dataDir, 'build-cache', accountId);
  }
}

/**
 * The bytes the entries under `dir` count for (never following a link): each its length or its allocated blocks,
 * whichever is more, and at least ENTRY_BYTES; or why it does not qualify: an entry that is
 * neither a folder nor a regular file, or more than `maxBytes` or MAX_ENTRIES in all (the walk stops there).
 */
async function plainSize(dir: string, maxBytes: number): Promise<number | 'not_plain_files' | 'too_large'> {
  let bytes = 0;
  let entries = 0;
  const folders = [dir];
  try {
    for (let folder = folders.pop(); folder !== undefined; folder = folders.pop()) {
      for await (const entry of await opendir(folder)) {
        const path = join(folder, entry.name);
        if (++entries > MAX_ENTRIES) return 'too_large';
        const info = await lstat(path);
        if (info.isDirectory()) folders.push(path);
        else if (!info.isFile()) return 'not_plain_files';
        if ((bytes += Math.max(ENTRY_BYTES, info.blocks * 512, info.size)) > maxBytes) return 'too_large';
      }
    }
  } catch {
    return 'not_plain_files'; // a folder that cannot be read (its mode changed, say)
  }
  return bytes;
}
