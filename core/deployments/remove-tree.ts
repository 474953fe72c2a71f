import { execFile } from 'node:child_process';
import { lstat } from 'node:fs/promises';
import { promisify } from 'node:util';
import { HoistError } from '../errors.js';

const run = promisify(execFile);

/**
 * Removes the folder tree at `path`, which tenant code may have written: a tree deeper than PATH_MAX (Node's
 * fs.rm fails on it with ENAMETOOLONG) or folders it made unreadable or read-only (EACCES when Hoist runs
 * unprivileged: the tenant's files are then Hoist's own). coreutils' `chmod -R u+rwx` (when not root) and
 * `rm -rf --one-file-system` walk by open folders (fts/openat), so any depth is fine; neither follows a link, and rm
 * leaves alone a file system mounted below `path`. Nothing there is fine. Throws (`internal`) when something is left.
 */
export async function removeTree(path: string): Promise<void> {
  const info = await lstat(path).catch(() => null);
  if (!info) return;
  const env = { PATH: '/usr/bin:/bin', LC_ALL: 'C' };
  let failure: Error | null = null;
  // Retried: a file that appears while the tree is removed (a process not quite gone) makes rmdir fail.
  for (let attempt = 0; attempt < 3; attempt++) {
    // Not on a link given as `path`: chmod would change what it points to.
    if (info.isDirectory() && process.getuid?.() !== 0)
      await run('chmod', ['-R', 'u+rwx', '--', path], { env }).catch(() => {});
    failure = await run('rm', ['-rf', '--one-file-system', '--', path], { env, maxBuffer: 4 * 1024 * 1024 }).then(
      () => null,
      (err: Error & { stderr?: string }) => err,
    );
    if (!failure) return;
  }
  const why = String((failure as { stderr?: string }).stderr ?? failure!.message)
    .trim()
    .split('\n')[0]!
    .slice(0, 300);
  throw new HoistError('internal', `could not remove ${path}: ${why}`, {}, { cause: failure });
}
