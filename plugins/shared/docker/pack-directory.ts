import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { join, posix } from 'node:path';
import type { Readable } from 'node:stream';
import tar from 'tar-stream';
import { TENANT_UID } from './hardening.js';

/** Who owns the entries of a tar made here, and whether everyone may read them. */
export interface TarOwnership {
  uid: number;
  gid: number;
  /** Folders at least 0755 and files at least 0644 (else: at least owner read and write). */
  worldReadable?: boolean;
}

/**
 * A tar of the contents of host directory `dir`, every entry under `prefix` (`app` puts them at
 * `/app` when the tar is put at `/`) and owned by the tenant user, with at least owner read and
 * write. See packDirectories.
 */
export function packDirectory(dir: string, prefix: string): { tar: Readable; done: Promise<void> } {
  return packDirectories([{ dir, prefix }], { uid: TENANT_UID, gid: TENANT_UID });
}

/**
 * One tar of the contents of each host directory `dir` under its `prefix`, owned as `owner` says.
 * Files, folders and symbolic links only; sockets, FIFOs and devices are left out. `done` rejects
 * when reading a directory failed; the tar then ends early, so whoever reads it is not left waiting.
 */
export function packDirectories(
  folders: { dir: string; prefix: string }[],
  owner: TarOwnership,
): { tar: Readable; done: Promise<void> } {
  const pack = tar.pack();
  const ids = { uid: owner.uid, gid: owner.gid };
  const [dirBits, fileBits] = owner.worldReadable ? [0o755, 0o644] : [0o700, 0o600];
  const walk = async (dir: string, prefix: string, rel: string): Promise<void> => {
    for (const name of (await readdir(join(dir, rel))).sort()) {
      const path = join(dir, rel, name);
      const entry = posix.join(prefix, rel, name);
      const st = await lstat(path);
      const base = { name: entry, mtime: st.mtime, ...ids };
      if (st.isDirectory()) {
        pack.entry({ ...base, type: 'directory', mode: (st.mode & 0o777) | dirBits });
        await walk(dir, prefix, posix.join(rel, name));
      } else if (st.isSymbolicLink()) {
        pack.entry({ ...base, type: 'symlink', linkname: await readlink(path), mode: 0o777 });
      } else if (st.isFile()) {
        await new Promise<void>((done, fail) => {
          const sink = pack.entry(
            { ...base, type: 'file', size: st.size, mode: (st.mode & 0o777) | fileBits },
            (err) => (err ? fail(err) : done()),
          );
          createReadStream(path).on('error', fail).pipe(sink);
        });
      }
    }
  };
  const done = (async () => {
    for (const { dir, prefix } of folders) {
      const st = await lstat(dir);
      pack.entry({ name: prefix, type: 'directory', mode: (st.mode & 0o777) | dirBits, mtime: st.mtime, ...ids });
      await walk(dir, prefix, '');
    }
    pack.finalize();
  })().catch((err) => {
    // The error is `done`'s; an entry still being written must not raise another on the tar.
    pack.on('error', () => {});
    pack.push(null);
    throw err;
  });
  return { tar: pack, done };
}
