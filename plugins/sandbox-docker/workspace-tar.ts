import { createWriteStream } from 'node:fs';
import { link, mkdir, readdir, realpath, rm, symlink, unlink, utimes } from 'node:fs/promises';
import { join, posix, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-stream';

/** What unpackDirectory wrote. */
export interface Unpacked {
  /** Bytes of file contents written. */
  bytes: number;
  /** True when the tar held more than `maxBytes` of file contents: unpacking stopped there. */
  overLimit: boolean;
}

const inside = (path: string, root: string) => path === root || path.startsWith(root + sep);

/**
 * Unpacks a tar read from a container (entries under one top folder, as the engine's archive
 * endpoint answers for `/app`) into the host directory `dest`, which should be empty. It writes
 * only folders, regular files, hard links to files it wrote and symbolic links that resolve inside
 * `dest`; it never writes through a symbolic link, drops set-id bits, and owns everything as the
 * calling user. Anything else (devices, FIFOs, a link leading outside, an absolute or `..` path) is
 * skipped and reported to `refused`. Stops once file contents pass `maxBytes`.
 */
export async function unpackDirectory(
  source: Readable,
  dest: string,
  opts: { maxBytes: number; refused(path: string, why: string): void },
): Promise<Unpacked> {
  const root = await realpath(dest);
  const dirs = new Set<string>(['']);
  const files = new Set<string>();
  const links = new Set<string>();
  let bytes = 0;
  let overLimit = false;
  const extract = tar.extract();

  /** Makes the folders above `rel` (relative to root), refusing to go through anything but folders made here. */
  const parents = async (rel: string): Promise<boolean> => {
    const parts = rel.split('/').slice(0, -1);
    for (let i = 1; i <= parts.length; i++) {
      const dir = parts.slice(0, i).join('/');
      if (dirs.has(dir)) continue;
      if (files.has(dir) || links.has(dir)) return false;
      await mkdir(join(root, dir), { mode: 0o755 });
      dirs.add(dir);
    }
    return true;
  };

  extract.on('entry', (header, stream, next) => {
    // tar-stream's entry streams (readable-stream 3) have no readableEnded: whether it was read is kept here.
    let read = false;
    const done = (err?: unknown) => {
      if (err || read) return next(err);
      stream.on('end', () => next());
      stream.resume();
    };
    (async () => {
      const top = header.name.replace(/^\.?\/+/, '').split('/')[0];
      const rel = posix.normalize(header.name.replace(/^\.?\/+/, '').slice(top.length + 1)).replace(/\/+$/, '');
      if (rel === '' || rel === '.') return;
      if (rel.startsWith('../') || rel === '..' || posix.isAbsolute(rel) || rel.includes('\0'))
        return opts.refused(header.name, 'its path leads outside the folder');
      if (!(await parents(rel))) return opts.refused(rel, 'a folder above it is not a folder');
      const path = join(root, rel);
      const mode = (header.mode ?? 0o644) & 0o777;
      switch (header.type) {
        case 'directory':
          if (!dirs.has(rel)) {
            if (files.has(rel) || links.has(rel)) return opts.refused(rel, 'it is both a folder and a file');
            await mkdir(path, { mode: mode | 0o700 });
            dirs.add(rel);
          }
          return;
        case 'file':
        case 'contiguous-file': {
          const size = header.size ?? 0;
          if (bytes + size > opts.maxBytes) {
            overLimit = true;
            throw new Error('over the limit');
          }
          if (dirs.has(rel) || files.has(rel) || links.has(rel)) return opts.refused(rel, 'it appears twice');
          files.add(rel);
          bytes += size;
          read = true;
          await pipeline(stream, createWriteStream(path, { flags: 'wx', mode: mode | 0o600 }));
          if (header.mtime) await utimes(path, header.mtime, header.mtime);
          return;
        }
        case 'link': {
          const target = posix.normalize((header.linkname ?? '').replace(/^\.?\/+/, '').slice(top.length + 1));
          if (!files.has(target))
            return opts.refused(rel, `it is a hard link to ${header.linkname}, not to a file of the folder`);
          if (dirs.has(rel) || files.has(rel) || links.has(rel)) return opts.refused(rel, 'it appears twice');
          await link(join(root, target), path);
          files.add(rel);
          return;
        }
        case 'symlink': {
          const target = header.linkname ?? '';
          // An absolute link into the folder (`/app/x`) is written relative so it still points inside on this host.
          const written =
            posix.isAbsolute(target) && (target === `/${top}` || target.startsWith(`/${top}/`))
              ? posix.relative(posix.dirname(`/${top}/${rel}`), target) || '.'
              : target;
          if (posix.isAbsolute(written) || !inside(resolve(root, posix.dirname(rel), written), root))
            return opts.refused(rel, `it is a symbolic link to ${target}, outside the folder`);
          if (dirs.has(rel) || files.has(rel) || links.has(rel)) return opts.refused(rel, 'it appears twice');
          await symlink(written, path);
          links.add(rel);
          return;
        }
        default:
          return opts.refused(
            rel,
            `it is a ${header.type ?? 'special file'}; only files, folders and links are copied`,
          );
      }
    })().then(() => done(), done);
  });

  try {
    await pipeline(source, extract);
  } catch (err) {
    if (!overLimit) throw err;
  }
  // A link whose path is inside may still resolve outside through another link (`a -> .`, `b -> a/..`).
  for (const rel of links) {
    const path = join(root, rel);
    const real = await realpath(path).catch(() => null);
    if (real && !inside(real, root)) {
      await unlink(path);
      opts.refused(rel, `it is a symbolic link that resolves to ${real}, outside the folder`);
    }
  }
  return { bytes, overLimit };
}

/** Removes everything inside `dir`, keeping `dir` itself. */
export async function emptyDirectory(dir: string): Promise<void> {
  for (const name of await readdir(dir)) await rm(join(dir, name), { recursive: true, force: true });
}
