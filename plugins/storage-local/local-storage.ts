import { randomUUID } from 'node:crypto';
import { constants, writeSync, type Dirent } from 'node:fs';
import { access, mkdir, open, readdir, rename, rm, rmdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { addAbortSignal, finished, type Readable } from 'node:stream';
import { HoistError, notFound } from '../../core/errors.js';
import type { Lifecycle } from '../../core/plugin.js';
import {
  checkKey,
  checkPrefix,
  checkRange,
  contentAddressedKey,
  isStorageKey,
  metered,
  type ByteRange,
  type ObjectInfo,
  type PutOptions,
  type Storage,
  type StoredObject,
} from '../../core/ports/storage.js';

/** Temp files older than this at start belong to a crashed process (uploads time out far sooner). */
const STALE_TEMP_MS = 60 * 60 * 1000;

const errno = (err: unknown) => (err as NodeJS.ErrnoException).code;
const missing = (err: unknown) => errno(err) === 'ENOENT' || errno(err) === 'ENOTDIR';
/** Runs a filesystem call, turning its failure into a HoistError. */
const fsOp = <T>(p: Promise<T>): Promise<T> => p.catch((err) => Promise.reject(storageError(err)));

/**
 * How many bytes of an object are written with synchronous calls: into the page cache, tens of µs for a 64 KB chunk.
 * Through the libuv pool each chunk cost a trip, and the next chunk was read only once it was written: 0.87 MB took
 * 9 ms to write in bench/upload-to-live, about 3 ms so. Past this, a large upload's chunks go through the pool again,
 * where a disk that throttles its writers blocks a pool thread, not the event loop.
 */
const WRITE_NOW_BYTES = 8 * 1024 * 1024;

/** Writes `chunk` whole to `fh` at its position: synchronously while `written` (bytes before it) is small. */
async function writeAll(fh: FileHandle, chunk: Buffer, written: number): Promise<void> {
  try {
    if (written + chunk.length <= WRITE_NOW_BYTES)
      for (let at = 0; at < chunk.length;) at += writeSync(fh.fd, chunk, at);
    else for (let at = 0; at < chunk.length;) at += (await fh.write(chunk, at)).bytesWritten;
  } catch (err) {
    throw storageError(err);
  }
}

/** A filesystem error as a HoistError: a key whose path runs into another key's folder is a conflict. */
function storageError(err: unknown, key?: string): HoistError {
  if (key && ['EISDIR', 'ENOTDIR', 'EEXIST', 'ENOTEMPTY'].includes(errno(err) ?? '')) {
    return new HoistError(
      'conflict',
      `Storage key ${key} collides with the path of another key`,
      { key },
      { cause: err },
    );
  }
  return new HoistError('unavailable', 'Local storage failed', {}, { cause: err });
}

/**
 * Objects as files under `root` (key `a/b.zip` is `<root>/a/b.zip`). Writes go to a temp file in
 * `<root>/.tmp` (same filesystem), are fsynced and renamed into place, so a crash never leaves a
 * partial object; `start` sweeps temp files a crash left behind.
 */
export class LocalStorage implements Storage, Lifecycle {
  private readonly root: string;
  private readonly tmpDir: string;

  constructor(root: string) {
    this.root = resolve(root);
    this.tmpDir = join(this.root, '.tmp');
  }

  /** Creates the directories (0700: uploads hold what accounts send) and removes temp files older than an hour. */
  async start(): Promise<void> {
    await mkdir(this.tmpDir, { recursive: true, mode: 0o700 });
    const cutoff = Date.now() - STALE_TEMP_MS;
    for (const name of await readdir(this.tmpDir)) {
      const file = join(this.tmpDir, name);
      const s = await stat(file).catch(() => null);
      if (s && s.mtimeMs < cutoff) await rm(file, { recursive: true, force: true });
    }
  }

  /** Throws when the storage directory cannot be written. */
  async check(): Promise<void> {
    await access(this.tmpDir, constants.W_OK);
  }

  put(key: string, body: Readable, opts: PutOptions = {}): Promise<StoredObject> {
    return this.write(body, opts, () => key, false);
  }

  putContentAddressed(
    prefix: string,
    body: Readable,
    { suffix, ...opts }: PutOptions & { suffix?: string } = {},
  ): Promise<StoredObject> {
    return this.write(body, opts, (sha256) => contentAddressedKey(prefix, sha256, suffix), true);
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    const path = this.pathOf(key);
    let fh: FileHandle;
    try {
      fh = await open(path, 'r');
    } catch (err) {
      throw missing(err) ? notFound(`Object ${key}`) : storageError(err);
    }
    try {
      const s = await fh.stat();
      if (!s.isFile()) throw notFound(`Object ${key}`);
      return range ? fh.createReadStream(checkRange(range, s.size)) : fh.createReadStream();
    } catch (err) {
      await fh.close();
      throw err;
    }
  }

  async localFile(key: string): Promise<string> {
    const path = this.pathOf(key);
    const s = await stat(path).catch((err) =>
      Promise.reject(missing(err) ? notFound(`Object ${key}`) : storageError(err)),
    );
    if (!s.isFile()) throw notFound(`Object ${key}`);
    return path;
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    const path = this.pathOf(key);
    try {
      const s = await stat(path);
      return s.isFile() ? { key, size: s.size, modifiedAt: s.mtime } : null;
    } catch (err) {
      if (missing(err)) return null;
      throw storageError(err, key);
    }
  }

  async delete(key: string): Promise<void> {
    const path = this.pathOf(key);
    try {
      await unlink(path);
    } catch (err) {
      if (missing(err)) return;
      throw storageError(err, key);
    }
    // Drop the folders this left empty, so per-operation log folders do not pile up.
    for (let dir = dirname(path); dir !== this.root; dir = dirname(dir)) {
      if (
        !(await rmdir(dir).then(
          () => true,
          () => false,
        ))
      )
        break;
    }
  }

  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    checkPrefix(prefix);
    const cut = prefix.lastIndexOf('/') + 1;
    yield* this.walk(prefix.slice(0, cut), prefix.slice(cut));
  }

  /** Objects under the folder of `dirKey` (`''` or ending in `/`) whose name there starts with `namePrefix`. */
  private async *walk(dirKey: string, namePrefix: string): AsyncGenerator<ObjectInfo> {
    let entries: Dirent[];
    try {
      entries = await readdir(join(this.root, dirKey), { withFileTypes: true });
    } catch (err) {
      if (missing(err)) return;
      throw storageError(err);
    }
    // Sorting a folder as "name/" gives lexicographic order of the full keys, as S3 lists them.
    const sortName = (e: Dirent) => (e.isDirectory() ? `${e.name}/` : e.name);
    entries.sort((a, b) => (sortName(a) < sortName(b) ? -1 : 1));
    for (const e of entries) {
      const key = dirKey + e.name;
      // Skips `.tmp` and anything else no key can name.
      if (!e.name.startsWith(namePrefix) || !isStorageKey(key)) continue;
      if (e.isDirectory()) yield* this.walk(`${key}/`, '');
      else if (e.isFile()) {
        const info = await this.stat(key);
        if (info) yield info;
      }
    }
  }

  private pathOf(key: string): string {
    return join(this.root, checkKey(key));
  }

  /**
   * Streams `body` into a temp file while hashing and counting, fsyncs it, and renames it to
   * `keyOf(sha256)`; with `keepExisting` an existing object there is left untouched.
   */
  private async write(
    body: Readable,
    { maxBytes, signal }: PutOptions,
    keyOf: (sha256: string) => string,
    keepExisting: boolean,
  ): Promise<StoredObject> {
    const tmp = join(this.tmpDir, randomUUID());
    let fh: FileHandle | undefined;
    try {
      this.pathOf(keyOf('0'.repeat(64))); // rejects a bad key before a byte is read
      // The body may fail before the temp file is open: keep that from being an unhandled 'error'
      // (the loop below still sees it, as the stream stays errored).
      finished(body, () => {});
      if (signal) addAbortSignal(signal, body);
      fh = await fsOp(open(tmp, 'wx', 0o600));
      const input = metered(body, maxBytes);
      let written = 0;
      for await (const chunk of input.chunks) {
        await writeAll(fh, chunk, written);
        written += chunk.length;
      }
      await fsOp(fh.sync());
      signal?.throwIfAborted();
      const { size, sha256 } = input.digest();
      const key = keyOf(sha256);
      if (keepExisting && (await this.stat(key))) await rm(tmp, { force: true });
      else await this.commit(tmp, key);
      return { key, size, sha256 };
    } catch (err) {
      body.destroy();
      await rm(tmp, { force: true });
      throw err;
    } finally {
      await fh?.close();
    }
  }

  /** Renames the temp file to the key's path and fsyncs the folder, so the object survives a crash. */
  private async commit(tmp: string, key: string): Promise<void> {
    const path = this.pathOf(key);
    const dir = dirname(path);
    for (let attempt = 1; ; attempt++) {
      try {
        await mkdir(dir, { recursive: true, mode: 0o700 });
        await rename(tmp, path);
        break;
      } catch (err) {
        // A concurrent delete may remove the (then empty) folder between mkdir and rename.
        if (errno(err) !== 'ENOENT' || attempt === 3) throw storageError(err, key);
      }
    }
    const d = await fsOp(open(dir, 'r'));
    await fsOp(d.sync()).finally(() => d.close());
  }
}
