import { createHash, randomBytes } from 'node:crypto';
import { closeSync, createReadStream, linkSync, lstatSync, open, unlinkSync, writeSync, type Stats } from 'node:fs';
import { chmod, link, mkdir, readdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';

/** How long a temporary file in the store, or an unreferenced blob, is left alone by a periodic collection. */
export const BLOB_GRACE_MS = 10 * 60_000;

/** How many blob names a store remembers having (about 100 bytes each: 10 MB when full). */
export const REMEMBERED_BLOBS = 100_000;

/**
 * How long `inTurns` runs before the event loop gets a turn, in ms. Linking, unlinking and looking up a file are
 * metadata calls of a few µs each, made synchronously: through the libuv pool each cost 20–70 µs of CPU on the VM
 * this was measured on (its wake-ups), three to six times the call itself. Where files were just created or removed
 * one call can take 100–200 µs of kernel time there, so turns are timed, not counted: a release removed after a
 * deploy held the event loop for 10–15 ms in turns of 64 files, while the deploy's answer and the edge's first
 * request of the new release waited (bench/upload-to-live.ts).
 */
const TURN_MS = 1;

/** Runs `fn` on each item, synchronously, giving the event loop a turn once TURN_MS have passed since the last. */
export async function inTurns<T>(items: Iterable<T>, fn: (item: T) => void): Promise<void> {
  let since = performance.now();
  for (const item of items) {
    fn(item);
    if (performance.now() - since < TURN_MS) continue;
    await new Promise<void>((resolve) => setImmediate(resolve));
    since = performance.now();
  }
}

/** A blob's name; `.br` and `.gz` ones are the variants of releases stored before variant packs (still collected). */
const BLOB_NAME = /^[0-9a-f]{64}(-x)?(\.br|\.gz)?$/;

/** A blob's name: its SHA-256, `-x` for an executable file. */
export function blobName(sha256: string, executable = false): string {
  return `${sha256}${executable ? '-x' : ''}`;
}

/** A blob's file mode: read-only, executable for a `-x` name. */
const modeOf = (name: string) => (name.includes('-x') ? 0o555 : 0o444);

/** The SHA-256 (hex) of a file, read as a stream. */
export async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

/**
 * A content-addressed file store on the local disk, `<dir>/<first 2 hex>/<name>` (see blobName), shared by every
 * release of this machine. A blob is written once, read-only (0444, 0555 when executable), and never written
 * again: it only ever gets a new name by a hard link, and a release file is such a link. A blob that no release
 * links to has one link (its name here), so collecting garbage is a matter of `nlink === 1`. The store must be on
 * the filesystem of the files it takes (hard links).
 */
export class BlobStore {
  /** Shard folders known to exist (a collection never removes one). */
  private readonly shards = new Set<string>();
  /** The blobs this store took or linked lately, least recent first (see put). */
  private readonly had = new Set<string>();

  constructor(readonly dir: string) {}

  /** Where the blob named `name` is (it may not exist). */
  pathOf(name: string): string {
    return join(this.dir, name.slice(0, 2), name);
  }

  /**
   * Links the blob `name` at `target` when the store has it (nothing to do when `target` is that link already).
   * Returns the blob's size and modification time, or null when the store has no such blob.
   */
  link(name: string, target: string): { size: number; mtimeMs: number } | null {
    try {
      linkSync(this.pathOf(name), target);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return null;
      if (code !== 'EEXIST') throw this.explained(err, target);
    }
    this.remember(name);
    const { size, mtimeMs } = lstatSync(target);
    return { size, mtimeMs };
  }

  /**
   * Makes `target` (which must not exist) the blob `name` holding `data`: a link to the blob when the store has it;
   * otherwise `data` is written there, read-only (0444, 0555 when executable), and becomes the blob, so its bytes
   * are written once. Resolves to the blob's modification time. A crash leaves either no blob or a whole one.
   * Only a blob this store had lately is asked for first: any other is most likely new, and is written without a
   * link that fails first (when it was there after all, as after a restart, the file is replaced by a link to it).
   */
  async put(name: string, target: string, data: Buffer): Promise<number> {
    const there = this.had.has(name) ? this.link(name, target) : null;
    if (there) return there.mtimeMs;
    await this.shard(name);
    await writeNew(target, data, modeOf(name));
    await this.share(target, name);
    return lstatSync(target).mtimeMs;
  }

  /**
   * Makes the regular file at `file` a link to its blob (`name`), adding the blob when it is new: the file
   * itself becomes the blob (its mode made read-only first), so its bytes are written once. When the blob is
   * there already, the file is replaced by a link to it. A crash leaves either the file or a whole blob,
   * never a partial one.
   */
  async adopt(file: string, name: string): Promise<void> {
    await this.shard(name);
    await chmod(file, modeOf(name));
    await this.share(file, name);
  }

  /** Remembers that the store has the blob `name` (beyond REMEMBERED_BLOBS, the least recent is forgotten). */
  private remember(name: string): void {
    this.had.delete(name);
    this.had.add(name);
    if (this.had.size > REMEMBERED_BLOBS) this.had.delete(this.had.values().next().value!);
  }

  /** Makes the read-only `file` the blob `name`, or, when the store has that blob already, a link to it. */
  private async share(file: string, name: string): Promise<void> {
    const blob = this.pathOf(name);
    for (let attempt = 1; ; attempt++) {
      try {
        linkSync(file, blob);
        this.remember(name);
        return;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'EEXIST') throw this.explained(err, file);
      }
      // Linked to a temporary name, then renamed over the file: the blob always has a link besides its own.
      const temp = `${file}.${randomBytes(4).toString('hex')}.link`;
      try {
        await link(blob, temp);
      } catch (err) {
        // Collected in between (it had no other link): add it again (a few times at most: the folder may be gone).
        if ((err as NodeJS.ErrnoException).code === 'ENOENT' && attempt < 3) continue;
        throw err;
      }
      await rename(temp, file);
      this.remember(name);
      return;
    }
  }

  /**
   * Removes the named blobs that nothing links to any more (after a release was removed): no grace, as the
   * way blobs are linked never leaves one with a single link while a release is taking it. Returns how many.
   */
  async release(names: Iterable<string>): Promise<number> {
    let removed = 0;
    await inTurns(new Set(names), (name) => {
      if (!this.removeIfUnused(this.pathOf(name), 0)) return;
      this.had.delete(name);
      removed++;
    });
    return removed;
  }

  /**
   * Removes every blob that nothing links to and every leftover temporary file, each once older than `graceMs`
   * (by its change time, which a new link or unlink updates). Never one a release uses: that one has a link in
   * the release's directory. Returns how many files it removed.
   */
  async collect(graceMs = BLOB_GRACE_MS): Promise<number> {
    let removed = 0;
    for (const shard of await readdir(this.dir).catch(() => [] as string[])) {
      if (!/^[0-9a-f]{2}$/.test(shard)) continue;
      await inTurns(await readdir(join(this.dir, shard)).catch(() => [] as string[]), (name) => {
        const temp = name.startsWith('.') && name.endsWith('.tmp');
        if (!temp && !BLOB_NAME.test(name)) return;
        if (!this.removeIfUnused(join(this.dir, shard, name), graceMs)) return;
        this.had.delete(name);
        removed++;
      });
    }
    return removed;
  }

  /** A failed link as thrown, or, across filesystems, why the store cannot work there. */
  private explained(err: unknown, file: string): unknown {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') return err;
    return new Error(`The file store ${this.dir} must be on the filesystem of ${file} (hard links)`, { cause: err });
  }

  private async shard(name: string): Promise<void> {
    const dir = join(this.dir, name.slice(0, 2));
    if (this.shards.has(dir)) return;
    await mkdir(dir, { recursive: true, mode: 0o700 });
    this.shards.add(dir);
  }

  private removeIfUnused(path: string, graceMs: number): boolean {
    const st = lstatOrNull(path);
    if (!st?.isFile() || st.nlink !== 1 || (graceMs > 0 && Date.now() - st.ctimeMs < graceMs)) return false;
    try {
      unlinkSync(path);
    } catch {
      // Gone meanwhile, or not ours to remove: the next collection looks again.
    }
    return true;
  }
}

const openFd = promisify(open);

/**
 * Writes `data` into a new file at `target` (which must not exist) with `mode`. The file is created in the libuv pool,
 * where creations overlap (one can take hundreds of µs); its bytes go into the page cache and it is closed at once,
 * without two more trips through the pool.
 */
async function writeNew(target: string, data: Buffer, mode: number): Promise<void> {
  const fd = await openFd(target, 'wx', mode);
  try {
    for (let done = 0; done < data.length;) done += writeSync(fd, data, done, data.length - done);
  } finally {
    closeSync(fd);
  }
}

/** The file's own status (not a link's target), or null when it cannot be read (absent, say). */
export function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}
