import { createWriteStream } from 'node:fs';
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import yazl from 'yazl';
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

/**
 * Packs `srcDir` as a ZIP at `destZipPath`, deterministically (see packFiles): the same content
 * always gives the same bytes. Refuses symbolic links, special files and names an upload could not
 * have (control characters, too long or too deep; ArchiveError with the relative path) before
 * writing anything, as the archive would be refused when it is deployed.
 */
export async function packDirectory(srcDir: string, destZipPath: string): Promise<void> {
  const root = resolve(srcDir);
  const files = await listFiles(root, '');
  if (files.reduce((sum, f) => sum + f.size, 0) <= IN_MEMORY_BYTES) {
    for (let i = 0; i < files.length; i += 8)
      await Promise.all(files.slice(i, i + 8).map(async (f) => (f.data = await readFile(join(root, f.path)))));
  } else for (const f of files) f.source = join(root, f.path);
  await packFiles(files, destZipPath);
}

/**
 * Writes files as a ZIP at `destZipPath`, deterministically: sorted by path, fixed times, modes
 * 0644/0755, already compressed formats stored and the rest deflated.
 */
async function packFiles(files: PackFile[], destZipPath: string): Promise<void> {
  const zip = new yazl.ZipFile();
  const written = pipeline(zip.outputStream, createWriteStream(destZipPath));
  written.catch(() => {}); // awaited below; this keeps a failure while adding from counting as unhandled
  let sinceBreak = 0;
  for (const { path, size, executable, data, source } of [...files].sort((a, b) =>
    a.path < b.path ? -1 : a.path > b.path ? 1 : 0,
  )) {
    const options = {
      mtime: FIXED_MTIME,
      forceDosTimestamp: true,
      mode: executable ? 0o100755 : 0o100644,
      compress: !PRECOMPRESSED.test(path),
    };
    if (!data) {
      zip.addFile(source!, path, options);
      continue;
    }
    zip.addBuffer(data, path, options);
    // addBuffer deflates at once, on this thread: let other work run after each megabyte or so.
    if ((sinceBreak += size) >= 1 << 20) {
      sinceBreak = 0;
      await new Promise((r) => setImmediate(r));
    }
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
