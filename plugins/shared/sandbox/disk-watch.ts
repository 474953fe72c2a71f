import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

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
 * minute of the host's packing), and at least ENTRY_BYTES. Counting stops once past `cap`.
 */
export async function treeBytes(dir: string, cap: number): Promise<number> {
  let total = 0;
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      if (total > cap) return;
      const p = join(d, e.name);
      const st = await lstat(p).catch(() => null);
      if (st) total += Math.max(ENTRY_BYTES, st.blocks * 512, st.isFile() ? st.size : 0);
      if (e.isDirectory()) await walk(p);
    }
  };
  await walk(dir);
  return total;
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
      // treeBytes skips what it cannot read, so this is hardly reached; the next tick measures again.
      .catch(() => {})
      .finally(() => (busy = false));
  }, 2000);
  return () => {
    done = true;
    clearInterval(timer);
  };
}
