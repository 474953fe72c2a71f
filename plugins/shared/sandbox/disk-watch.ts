import { spawn } from 'node:child_process';
import { lstat } from 'node:fs/promises';
import { resolve } from 'node:path';

/**
 * The least one entry (a file, a folder, a link...) counts for, in bytes: a block of the file system. Allocated blocks
 * alone count nothing for an empty file and nothing for a folder, yet each takes an inode (a folder a block too): a
 * build made 200,000 empty files or 20,000 folders (80 MiB) within a 64 MiB limit, and so could fill the host's inode
 * table or disk for every account.
 */
export const ENTRY_BYTES = 4096;

/**
 * Bytes the entries under `dir` count for: each its allocated blocks, or a regular file's length when that is more
 * (a sparse file: a copy or an archive of it reads and writes all of it; 30 of 60 MiB took no block and half a
 * minute of the host's packing), and at least ENTRY_BYTES. Counting stops once past `cap`. GNU find walks the tree by
 * open folders (fts), so a tree deeper than PATH_MAX is counted whole; what it cannot read (a folder the tenant made
 * unreadable, when Hoist runs unprivileged) counts as Infinity, over any limit: data there would go uncounted. A
 * missing `dir` counts 0; an entry removed while it is counted is skipped.
 */
export function treeBytes(dir: string, cap: number): Promise<number> {
  return lstat(dir).then(
    () => countWithFind(resolve(dir), cap),
    () => 0,
  );
}

function countWithFind(dir: string, cap: number): Promise<number> {
  return new Promise((done) => {
    // Neither a link nor another file system is followed; entries only, not `dir` itself.
    const find = spawn('find', [dir, '-mindepth', '1', '-xdev', '-ignore_readdir_race', '-printf', '%y %s %b\\n'], {
      env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let total = 0;
    let rest = '';
    let stopped = false;
    let complaint = false;
    find.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      if (stopped) return;
      const lines = (rest + chunk).split('\n');
      rest = lines.pop()!;
      for (const line of lines) {
        const [type, size, blocks] = line.split(' ');
        total += Math.max(ENTRY_BYTES, Number(blocks) * 512 || 0, type === 'f' ? Number(size) || 0 : 0);
        if (total > cap) {
          stopped = true;
          find.kill('SIGKILL');
          return;
        }
      }
    });
    find.stderr.on('data', () => (complaint = true));
    // Not there (no find on this host) or killed by another: nothing says the tree is within the limit.
    find.once('error', () => done(Infinity));
    find.once('close', (code) => done(stopped ? total : code === 0 && !complaint ? total : Infinity));
  });
}

/** Whether the host folders `dirs` together count for more than `limitBytes` (see treeBytes). */
export async function overDisk(dirs: string[], limitBytes: number): Promise<boolean> {
  const sizes = await Promise.all(dirs.map((d) => treeBytes(d, limitBytes)));
  return sizes.reduce((a, b) => a + b, 0) > limitBytes;
}

/**
 * Checks every 2 s that the host folders `dirs` (a run's volumes, seen on the engine's host)
 * together hold at most `limitBytes`, and calls `over` once when they do not. Returns the function
 * that stops checking. What a run writes after its last check is not seen here: check with
 * overDisk once it has ended.
 */
export function watchDisk(dirs: string[], limitBytes: number, over: () => void): () => void {
  let busy = false;
  let done = false;
  const timer = setInterval(() => {
    if (busy || done) return;
    busy = true;
    overDisk(dirs, limitBytes)
      .then((isOver) => {
        if (!done && isOver) {
          done = true;
          over();
        }
      })
      // treeBytes counts what it cannot read as over, so this is hardly reached; the next tick measures again.
      .catch(() => {})
      .finally(() => (busy = false));
  }, 2000);
  return () => {
    done = true;
    clearInterval(timer);
  };
}
