import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** Bytes the files under `dir` take on disk (allocated blocks); counting stops once past `cap`. */
export async function treeBytes(dir: string, cap: number): Promise<number> {
  let total = 0;
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      if (total > cap) return;
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else total += ((await lstat(p).catch(() => null))?.blocks ?? 0) * 512;
    }
  };
  await walk(dir);
  return total;
}

/**
 * Checks every 2 s that the host folders `dirs` (a run's volumes, seen on the engine's host)
 * together hold at most `limitBytes`, and calls `over` once when they do not. Returns the function
 * that stops checking.
 */
export function watchDisk(dirs: string[], limitBytes: number, over: () => void): () => void {
  let busy = false;
  let done = false;
  const timer = setInterval(() => {
    if (busy || done) return;
    busy = true;
    Promise.all(dirs.map((d) => treeBytes(d, limitBytes)))
      .then((sizes) => {
        if (!done && sizes.reduce((a, b) => a + b, 0) > limitBytes) {
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
