import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { join, posix } from 'node:path';
import type { Readable } from 'node:stream';
import tar from 'tar-stream';
import { TENANT_UID } from './hardening.js';

/**
 * A tar of the contents of host directory `dir`, every entry under `prefix` (`app` puts them at
 * `/app` when the tar is put at `/`) and owned by `owner` (the tenant user unless given), with at
 * least owner read and write. Files, folders and symbolic links only; sockets, FIFOs and devices are left out. `done`
 * rejects when reading `dir` failed; the tar then ends early, so whoever reads it is not left waiting.
 */
export function packDirectory(
  dir: string,
  prefix: string,
  owner = { uid: TENANT_UID, gid: TENANT_UID },
): { tar: Readable; done: Promise<void> } {
  const pack = tar.pack();
  const walk = async (rel: string): Promise<void> => {
    for (const name of (await readdir(join(dir, rel))).sort()) {
      const path = join(dir, rel, name);
      const entry = posix.join(prefix, rel, name);
      const st = await lstat(path);
      const base = { name: entry, mtime: st.mtime, ...owner };
      if (st.isDirectory()) {
        pack.entry({ ...base, type: 'directory', mode: (st.mode & 0o777) | 0o700 });
        await walk(posix.join(rel, name));
      } else if (st.isSymbolicLink()) {
        pack.entry({ ...base, type: 'symlink', linkname: await readlink(path), mode: 0o777 });
      } else if (st.isFile()) {
        await new Promise<void>((done, fail) => {
          const sink = pack.entry({ ...base, type: 'file', size: st.size, mode: (st.mode & 0o777) | 0o600 }, (err) =>
            err ? fail(err) : done(),
          );
          createReadStream(path).on('error', fail).pipe(sink);
        });
      }
    }
  };
  const done = (async () => {
    const st = await lstat(dir);
    pack.entry({ name: prefix, type: 'directory', mode: (st.mode & 0o777) | 0o700, mtime: st.mtime, ...owner });
    await walk('');
    pack.finalize();
  })().catch((err) => {
    // The error is `done`'s; an entry still being written must not raise another on the tar.
    pack.on('error', () => {});
    pack.push(null);
    throw err;
  });
  return { tar: pack, done };
}
