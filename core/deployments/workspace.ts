import { chmod, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Workspaces } from '../ports/workspaces.js';

/**
 * Runs `fn` with a fresh directory under `<dataDir>/work`, made when `fn` first asks for it (`dir()`) and removed
 * afterwards whatever happens. Both are 0711 (mkdtemp gives 0700): the sandbox's unprivileged uid must traverse them
 * to bind a directory of the workspace, without being able to list what else is there.
 */
export async function withWorkspace<T>(
  dataDir: string,
  label: string,
  fn: (dir: () => Promise<string>) => Promise<T>,
): Promise<T> {
  const made: { dir?: Promise<string> } = {};
  const dir = () =>
    (made.dir ??= (async () => {
      const work = join(dataDir, 'work');
      await mkdir(work, { recursive: true, mode: 0o711 });
      await chmod(work, 0o711);
      const path = await mkdtemp(join(work, `${label}-p${process.pid}-`));
      await chmod(path, 0o711);
      return path;
    })());
  try {
    return await fn(dir);
  } finally {
    const path = await made.dir?.catch(() => null);
    // Retried a few times: a file that appears while the tree is removed makes rmdir fail with ENOTEMPTY.
    if (path) await rm(path, { recursive: true, force: true, maxRetries: 3 });
  }
}

/**
 * Removes the workspaces a crashed process left under `<dataDir>/work` (uploaded sources, build
 * trees): those of a process that is gone, and of this very process (it has made none yet when
 * this runs at start). Returns how many it removed.
 */
export async function sweepWorkspaces(dataDir: string): Promise<number> {
  const work = join(dataDir, 'work');
  let removed = 0;
  for (const name of await readdir(work).catch(() => [] as string[])) {
    const pid = Number(/-p(\d+)-[^-]+$/.exec(name)?.[1] ?? 0);
    if (pid && pid !== process.pid && alive(pid)) continue;
    await rm(join(work, name), { recursive: true, force: true, maxRetries: 3 });
    removed++;
  }
  return removed;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The Workspaces port on this Hoist's data directory (withWorkspace, swept by sweepWorkspaces). */
export class DataDirWorkspaces implements Workspaces {
  constructor(private readonly dataDir: string) {}

  run<T>(label: string, fn: (dir: string) => Promise<T>): Promise<T> {
    return withWorkspace(this.dataDir, label, async (dir) => fn(await dir()));
  }
}
