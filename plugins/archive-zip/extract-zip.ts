import { createWriteStream } from 'node:fs';
import { chmod, mkdir, readdir, realpath, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ArchiveError, quoteName } from './archive-error.js';
import type { ArchiveFile, ArchiveManifest } from './archive-types.js';
import { eachFile, type FileContent } from './each-file.js';
import { zipError } from './open-zip.js';

/** Hands every manifest file to `fn`, one at a time, checked (eachFile, eachKept). */
export type FileSource = (fn: (file: ArchiveFile, content: FileContent) => Promise<void>) => Promise<void>;

/**
 * Writes exactly the manifest's files (from inspectZip) into `destDir`, which must be empty or
 * absent: regular files only (0644, or 0755 when the entry was executable), never outside destDir,
 * each held to its declared size and CRC before or while it is written. On any error or abort it
 * removes what it wrote and rethrows (an abort rethrows the signal's reason). `files` hands the files over instead of
 * eachFile reading them out of the ZIP (as eachKept does, from the bytes readZip checked).
 */
export async function extractZip(
  path: string,
  manifest: ArchiveManifest,
  destDir: string,
  opts: { signal?: AbortSignal; files?: FileSource } = {},
): Promise<void> {
  const { signal, files = (fn) => eachFile(path, manifest, fn, signal) } = opts;
  signal?.throwIfAborted();
  const dest = resolve(destDir);
  const created = await mkdir(dest, { recursive: true });
  if (!created && (await readdir(dest)).length) throw new Error(`extractZip: ${dest} is not empty`);
  // Small files, their bytes already checked, are written up to eight at once: the waits overlap.
  const writing = new Set<Promise<void>>();
  const failures: unknown[] = [];
  const write = (target: string, data: Buffer, mode: number) => {
    const done: Promise<void> = writeFile(target, data, { flag: 'wx', mode })
      .then(() => chmod(target, mode))
      .catch((err) => void failures.push(err))
      .finally(() => writing.delete(done));
    writing.add(done);
  };
  try {
    const root = await realpath(dest);
    const dirs = new Set([root]);
    await files(async (file, content) => {
      const target = resolve(root, file.path);
      if (!target.startsWith(root + sep))
        throw new ArchiveError(
          'archive_path_traversal',
          `Entry ${quoteName(file.name)} would be written outside the workspace`,
          file.name,
        );
      const dir = dirname(target);
      if (!dirs.has(dir)) {
        await mkdir(dir, { recursive: true });
        if ((await realpath(dir)) !== dir)
          throw new ArchiveError(
            'archive_symlink',
            `Entry ${quoteName(file.name)} would be written through a link`,
            file.name,
          );
        dirs.add(dir);
      }
      const mode = file.mode & 0o111 ? 0o755 : 0o644;
      // 'wx' (O_CREAT|O_EXCL) fails on anything already there, a symbolic link included, so none is followed.
      if (content.data) {
        if (failures.length) throw failures[0];
        write(target, content.data, mode);
        if (writing.size >= 8) await Promise.race(writing);
      } else {
        await pipeline(content.stream, createWriteStream(target, { flags: 'wx', mode }), { signal });
        await chmod(target, mode);
      }
    });
    await Promise.all(writing);
    if (failures.length) throw failures[0];
  } catch (err) {
    await Promise.all(writing);
    if (created) await rm(created, { recursive: true, force: true });
    else for (const name of await readdir(dest)) await rm(join(dest, name), { recursive: true, force: true });
    throw signal?.aborted ? signal.reason : zipError(err);
  }
}
