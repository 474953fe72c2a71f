import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, link, lstat, mkdir, readdir, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';

/** How long a temporary file in the store, or an unreferenced blob, is left alone by a periodic collection. */
export const BLOB_GRACE_MS = 10 * 60_000;

const BLOB_NAME = /^[0-9a-f]{64}(-x)?(\.br|\.gz)?$/;

/** A blob's name: its SHA-256, `-x` for an executable file, then the variant's extension (`.br`, `.gz`). */
export function blobName(sha256: string, executable = false, variant = ''): string {
  return `${sha256}${executable ? '-x' : ''}${variant}`;
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

  constructor(readonly dir: string) {}

  /** Where the blob named `name` is (it may not exist). */
  pathOf(name: string): string {
    return join(this.dir, name.slice(0, 2), name);
  }

  /**
   * Links the blob `name` at `target` when the store has it (nothing to do when `target` is that link already).
   * Resolves to the blob's size and modification time, or null when the store has no such blob.
   */
  async link(name: string, target: string): Promise<{ size: number; mtimeMs: number } | null> {
    try {
      await link(this.pathOf(name), target);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return null;
      if (code !== 'EEXIST') throw this.explained(err, target);
    }
    const { size, mtimeMs } = await lstat(target);
    return { size, mtimeMs };
  }

  /**
   * Makes `target` (which must not exist) the blob `name` holding `data`: a link to the blob when the store has it;
   * otherwise `data` is written there, read-only (0444, 0555 when executable), and becomes the blob, so its bytes
   * are written once. Resolves to the blob's modification time. A crash leaves either no blob or a whole one.
   */
  async put(name: string, target: string, data: Buffer): Promise<number> {
    const there = await this.link(name, target);
    if (there) return there.mtimeMs;
    await this.shard(name);
    await writeFile(target, data, { flag: 'wx', mode: modeOf(name) });
    await this.share(target, name);
    return (await lstat(target)).mtimeMs;
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

  /** Makes the read-only `file` the blob `name`, or, when the store has that blob already, a link to it. */
  private async share(file: string, name: string): Promise<void> {
    const blob = this.pathOf(name);
    for (let attempt = 1; ; attempt++) {
      try {
        await link(file, blob);
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
      return;
    }
  }

  /**
   * Adds a blob written by `write` (into the temporary path it gets, in the store) unless it is there, and links
   * it at `target`. Resolves to the blob's size, or null when `keep` refused what was written (nothing kept).
   */
  async add(
    name: string,
    target: string,
    write: (temp: string) => Promise<void>,
    keep: (size: number) => boolean = () => true,
  ): Promise<number | null> {
    const blob = this.pathOf(name);
    await this.shard(name);
    for (let attempt = 1; ; attempt++) {
      try {
        await link(blob, target);
        return (await lstat(target)).size;
      } catch (err) {
        // Linked already (two files of one release with the same content share their variant).
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') return (await lstat(target)).size;
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 3) throw err;
      }
      const temp = join(this.dir, name.slice(0, 2), `.${name}.${randomBytes(4).toString('hex')}.tmp`);
      try {
        await write(temp);
        const { size } = await lstat(temp);
        if (!keep(size)) return null;
        await chmod(temp, modeOf(name));
        await link(temp, blob).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw err;
        });
      } finally {
        await unlink(temp).catch(() => {});
      }
    }
  }

  /**
   * Removes the named blobs that nothing links to any more (after a release was removed): no grace, as the
   * way blobs are linked never leaves one with a single link while a release is taking it. Returns how many.
   */
  async release(names: Iterable<string>): Promise<number> {
    let removed = 0;
    for (const name of new Set(names)) if (await this.removeIfUnused(this.pathOf(name), 0)) removed++;
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
      for (const name of await readdir(join(this.dir, shard)).catch(() => [] as string[])) {
        const temp = name.startsWith('.') && name.endsWith('.tmp');
        if (!temp && !BLOB_NAME.test(name)) continue;
        if (await this.removeIfUnused(join(this.dir, shard, name), graceMs)) removed++;
      }
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

  private async removeIfUnused(path: string, graceMs: number): Promise<boolean> {
    const st = await lstat(path).catch(() => null);
    if (!st?.isFile() || st.nlink !== 1 || (graceMs > 0 && Date.now() - st.ctimeMs < graceMs)) return false;
    await unlink(path).catch(() => {});
    return true;
  }
}
