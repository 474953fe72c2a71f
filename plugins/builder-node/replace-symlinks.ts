import { chmod, cp, readdir, readlink, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { StageError } from '../../core/errors.js';

const inside = (path: string, root: string) => path === root || path.startsWith(root + sep);

/** What the copies of linked folders and files may add up to, in bytes and entries. */
export interface CopyBudget {
  bytes: number;
  entries: number;
}

/**
 * Counts what a copy of `path` following its links would write against `budget`, before anything is copied; throws
 * StageError `build_symlinks_too_large` once it is spent (links to folders holding links to folders multiply a copy:
 * depth 8 of 8 links each made a terabyte out of one file). `seen`: the folders being walked, so a link back to one
 * of them (a cycle) is refused too. A FIFO, socket or device on the way is refused (`build_symlink_special`): a copy
 * cannot hold one (Node's cp threw its own ERR_FS_CP_FIFO_PIPE, an internal error to the Build stage).
 */
async function spend(path: string, budget: CopyBudget, seen: Set<string> = new Set()): Promise<void> {
  const st = await stat(path).catch(() => null);
  if (!st) return;
  if (!st.isFile() && !st.isDirectory())
    throw new StageError(
      'build_symlink_special',
      'A symbolic link under node_modules leads to something that is not a file or a folder (a FIFO, socket or ' +
        'device); an artifact can only hold files and folders.',
    );
  budget.entries -= 1;
  budget.bytes -= st.isFile() ? st.size : 0;
  if (budget.bytes < 0 || budget.entries < 0)
    throw new StageError(
      'build_symlinks_too_large',
      'The symbolic links under node_modules would copy more than the build may write (links to folders that hold ' +
        'links to folders multiply a copy); keep links to files, or fewer nested links.',
    );
  if (!st.isDirectory()) return;
  const real = await realpath(path);
  if (seen.has(real))
    throw new StageError('build_symlinks_too_large', `${path} links back to a folder it is inside of (a cycle)`);
  seen.add(real);
  for (const name of await readdir(path)) await spend(join(path, name), budget, seen);
  seen.delete(real);
}

/**
 * Makes `dir` (inside `root`) packable, since an artifact holds only files and folders: each symbolic
 * link under it that points inside `root` becomes a shell shim that execs its target (executables) or
 * a copy of the target (other files, folders); a dangling link is removed. Throws StageError
 * `build_symlink_outside` naming a link that points outside `root`, and `build_symlinks_too_large` when the copies
 * would write more than `budget` (checked before each is made). Returns how many links it replaced.
 */
export async function replaceSymlinks(root: string, dir: string, budget: CopyBudget): Promise<number> {
  const realRoot = await realpath(root);
  // Every link of the whole tree is checked before any is replaced: a copy of a folder follows the
  // links inside it, wherever they are.
  const scope = join(realRoot, relative(root, dir));
  const links: { path: string; dir: string; target: string | null }[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const entry of await readdir(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) await walk(path);
      if (!entry.isSymbolicLink()) continue;
      const written = resolve(d, await readlink(path));
      const target = await realpath(path).catch(() => null);
      if (!(target ? inside(target, realRoot) : inside(written, root) || inside(written, realRoot))) {
        const name = relative(realRoot, path);
        throw new StageError(
          'build_symlink_outside',
          `${name} is a symbolic link to ${target ?? written}, outside the project; an ` +
            `artifact can only hold the project's own files.`,
          { path: name },
        );
      }
      if (inside(path, scope)) links.push({ path, dir: d, target });
    }
  };
  await walk(realRoot);
  for (const { path, dir: d, target } of links) {
    await rm(path);
    if (!target) continue;
    const st = await stat(target);
    // An executable file gets a shim, not a copy.
    if (st.isDirectory() || !(st.mode & 0o111)) await spend(target, budget);
    if (st.isDirectory()) await cp(target, path, { recursive: true, dereference: true });
    else if (st.mode & 0o111) {
      const rel = relative(d, target).replace(/["$`\\]/g, '\\$&');
      await writeFile(path, `#!/bin/sh\nexec "$(dirname "$0")/${rel}" "$@"\n`);
      await chmod(path, 0o755);
    } else await cp(target, path);
  }
  return links.length;
}
