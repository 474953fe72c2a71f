import { createReadStream, createWriteStream, type ReadStream } from 'node:fs';
import { lstat, readdir, readFile, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import yazl from 'yazl';
import { HoistError } from '../../core/errors.js';
import { ArchiveError, quoteName } from './archive-error.js';
import { DEFAULT_ARCHIVE_LIMITS } from './archive-types.js';
import { checkEntryName } from './entry-name.js';

// A local-time date and DOS timestamps only, so the bytes do not depend on when or in which time zone we pack.
const FIXED_MTIME = new Date(2000, 0, 1);
/** Trees up to this size are packed from memory (files read a few at once): far fewer waits than a stream per file. */
export const IN_MEMORY_BYTES = 8 * 1024 * 1024;
/** Formats that are compressed already: stored as they are, as deflating them again costs time and saves nothing. */
const PRECOMPRESSED = /\.(png|jpe?g|gif|webp|avif|woff2?|gz|br|zip|mp4|webm|mp3)$/i;

/** One file of an artifact: its bytes, or the file to stream them from. */
interface PackFile {
  /** Path in the artifact, `/`-separated. */
  path: string;
  size: number;
  executable: boolean;
  data?: Buffer;
  source?: string;
}

/** How a directory is packed. */
export interface PackOptions {
  /**
   * The largest ZIP wanted: once the output passes it, packing stops, nothing more is read or deflated, the file
   * is removed and it rejects with HoistError('payload_too_large', {limit}).
   */
  maxBytes?: number;
}

/**
 * Packs `srcDir` as a ZIP at `destZipPath`, deterministically (see packFiles): the same content
 * always gives the same bytes. Refuses symbolic links, special files and names an upload could not
 * have (control characters, too long or too deep; ArchiveError with the relative path) before
 * writing anything, as the archive would be refused when it is deployed. Stops at `opts.maxBytes`
 * (see PackOptions); a failure leaves no file at `destZipPath`.
 */
export async function packDirectory(srcDir: string, destZipPath: string, opts: PackOptions = {}): Promise<void> {
  const root = resolve(srcDir);
  const files = await listFiles(root, '');
  if (files.reduce((sum, f) => sum + f.size, 0) <= IN_MEMORY_BYTES) {
    for (let i = 0; i < files.length; i += 8)
      await Promise.all(files.slice(i, i + 8).map(async (f) => (f.data = await readFile(join(root, f.path)))));
  } else for (const f of files) f.source = join(root, f.path);
  await packFiles(files, destZipPath, opts.maxBytes ?? Infinity).catch(async (err) => {
    await rm(destZipPath, { force: true });
    throw err;
  });
}

/**
 * Writes files as a ZIP at `destZipPath`, deterministically: sorted by path, fixed times, modes
 * 0644/0755, already compressed formats stored and the rest deflated. Rejects with payload_too_large as
 * soon as the output passes `maxBytes`, having written no more than them.
 */
async function packFiles(files: PackFile[], destZipPath: string, maxBytes: number): Promise<void> {
  const zip = new yazl.ZipFile();
  let failed: Error | null = null;
  // Files being read: destroyed when packing stops, as yazl would leave them open, paused.
  const reading = new Set<ReadStream>();
  /** Stops packing on the first failure: no more reading or deflating, and `written` rejects with it. */
  const stop = (err: Error) => {
    if (failed) return;
    failed = err;
    for (const s of reading) s.destroy();
    (zip.outputStream as Readable).destroy(err);
  };
  zip.on('error', stop);
  let bytes = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      if (bytes <= maxBytes) return done(null, chunk);
      const err = new HoistError('payload_too_large', `The ZIP is larger than ${maxBytes} bytes`, { limit: maxBytes });
      stop(err);
      done(err);
    },
  });
  const written = pipeline(zip.outputStream, counted, createWriteStream(destZipPath));
  written.catch(stop); // awaited below; this stops adding at once, and keeps the failure from counting as unhandled
  let sinceBreak = 0;
  for (const { path, size, executable, data, source } of [...files].sort((a, b) =>
    a.path < b.path ? -1 : a.path > b.path ? 1 : 0,
  )) {
    if (failed) break;
    const options = {
      mtime: FIXED_MTIME,
      forceDosTimestamp: true,
      mode: executable ? 0o100755 : 0o100644,
      compress: !PRECOMPRESSED.test(path),
    };
    if (!data) {
      // Opened when yazl reaches it, as addFile would; `size` as addFile's stat would give it (the same bytes).
      zip.addReadStreamLazy(path, { ...options, size }, (give) => {
        const stream = createReadStream(source!);
        reading.add(stream);
        stream.on('close', () => reading.delete(stream));
        stream.on('error', stop);
        if (failed) stream.destroy();
        give(null, stream);
      });
      continue;
    }
    zip.addBuffer(data, path, options);
    // addBuffer deflates at once, on this thread: let other work run after each megabyte or so.
    if ((sinceBreak += size) >= 1 << 20) {
      sinceBreak = 0;
      await new Promise((r) => setImmediate(r));
    }
  }
  if (failed) {
    await written.catch(() => {});
    throw failed;
  }
  zip.end();
  await written;
}

async function listFiles(root: string, dir: string): Promise<PackFile[]> {
  const out: PackFile[] = [];
  for (const name of await readdir(join(root, dir))) {
    const path = dir ? `${dir}/${name}` : name;
    checkEntryName(path, DEFAULT_ARCHIVE_LIMITS);
    const stat = await lstat(join(root, path));
    if (stat.isSymbolicLink())
      throw new ArchiveError(
        'archive_symlink',
        `${quoteName(path)} is a symbolic link; an artifact may hold only files and folders`,
        path,
      );
    if (stat.isDirectory()) out.push(...(await listFiles(root, path)));
    else if (stat.isFile()) out.push({ path, size: stat.size, executable: (stat.mode & 0o111) !== 0 });
    else throw new ArchiveError('archive_invalid', `${quoteName(path)} is not a regular file`, path);
  }
  return out;
}
