import { writeSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import type { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

const NOT_SMALLER = new Error('not smaller than the limit');
/** How much of another pack a copy reads at once. */
const COPY_CHUNK = 1024 * 1024;

/**
 * A pack as it was when its index was read: packs are written once and never rewritten, so a file at `path` with
 * another inode, size or modification time is another pack (the release was removed, and maybe made again).
 */
export interface PackFile {
  path: string;
  ino: number;
  size: number;
  mtimeMs: number;
}

/** Where a variant is in another release's pack. */
export interface PackedVariant {
  pack: PackFile;
  offset: number;
  size: number;
}

/** What is known of the variants of one content: where each is in a pack, or null when it was not smaller. */
export interface KnownVariants {
  br: PackedVariant | null;
  gzip: PackedVariant | null;
}

/**
 * The precompressed variants of one release, one after the other in one file, read-only (a deploy creates one file
 * for all of them: creating a file costs more than writing a few KB into one). Appends may run at once: each takes
 * its place at the end before it writes there.
 */
export class VariantPack {
  private end = 0;
  private readonly sources = new Map<PackFile, Promise<FileHandle | null>>();

  private constructor(private readonly handle: FileHandle) {}

  /** Creates the pack at `path`, which must not exist. */
  static async create(path: string): Promise<VariantPack> {
    return new VariantPack(await open(path, 'wx', 0o444));
  }

  /**
   * Appends `data`; resolves to where it starts. A synchronous write into the page cache (a variant made in memory:
   * of a file of 1 MB at most, mostly a few KB): through the libuv pool it cost several times the write in CPU.
   */
  async append(data: Buffer): Promise<number> {
    const offset = this.end;
    this.end += data.length;
    for (let done = 0; done < data.length;)
      done += writeSync(this.handle.fd, data, done, data.length - done, offset + done);
    return offset;
  }

  /**
   * Appends what `source` gives through `through` (a compressor) while it stays smaller than `limit` bytes, and
   * resolves to where it starts and its size, or null when it did not (what it wrote is left unnamed). Its size
   * is not known before, so it takes room for `limit - 1` bytes at once: what it leaves unwritten, when something
   * follows, is a hole in the file (no disk).
   */
  async appendBelow(
    limit: number,
    source: Readable,
    through: Transform,
  ): Promise<{ offset: number; size: number } | null> {
    const offset = this.end;
    this.end += limit - 1;
    let size = 0;
    let over = false;
    const write = async (chunks: AsyncIterable<Buffer>) => {
      for await (const chunk of chunks) {
        over = size + chunk.length >= limit;
        if (over) throw NOT_SMALLER;
        await this.handle.write(chunk, 0, chunk.length, offset + size);
        size += chunk.length;
      }
    };
    try {
      await pipeline(source, through, write);
    } catch (err) {
      // Not always NOT_SMALLER itself: the pipeline may reject with the AbortError of the streams it destroyed.
      if (over) return null;
      throw err;
    }
    return { offset, size };
  }

  /**
   * Appends a copy of `from`, read out of its pack, and resolves to where it starts; or null, when that pack is
   * gone, is another one now, or gives fewer bytes than named (what was copied is left unnamed). Never copies
   * bytes of anything but the pack `from` names.
   */
  async copy(from: PackedVariant): Promise<number | null> {
    const source = await this.opened(from.pack);
    if (!source || from.offset + from.size > from.pack.size) return null;
    const offset = this.end;
    this.end += from.size;
    const buffer = Buffer.allocUnsafe(Math.min(COPY_CHUNK, from.size));
    for (let done = 0; done < from.size;) {
      const want = Math.min(buffer.length, from.size - done);
      const { bytesRead } = await source.read(buffer, 0, want, from.offset + done);
      if (bytesRead !== want) return null;
      await this.handle.write(buffer, 0, want, offset + done);
      done += want;
    }
    return offset;
  }

  /** Another pack, opened once for every copy out of it (null when it is gone or another file now). */
  private opened(pack: PackFile): Promise<FileHandle | null> {
    let source = this.sources.get(pack);
    if (!source) {
      source = (async () => {
        const handle = await open(pack.path, 'r').catch(() => null);
        const st = await handle?.stat().catch(() => null);
        if (st && st.ino === pack.ino && st.size === pack.size && st.mtimeMs === pack.mtimeMs) return handle!;
        await handle?.close();
        return null;
      })();
      this.sources.set(pack, source);
    }
    return source;
  }

  /** Closes the pack (every append done) and the packs it copied from. */
  async close(): Promise<void> {
    for (const source of this.sources.values()) await (await source.catch(() => null))?.close();
    await this.handle.close();
  }
}
