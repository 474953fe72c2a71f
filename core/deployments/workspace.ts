import { createWriteStream } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Storage } from '../ports/storage.js';
import type { Workspaces } from '../ports/workspaces.js';

/**
 * Runs `fn` in a fresh directory under `<dataDir>/work`, removed afterwards whatever happens. Both
 * are 0711 (mkdtemp gives 0700): the sandbox's unprivileged uid must traverse them to bind a
 * directory of the workspace, without being able to list what else is there.
 */
export async function withWorkspace<T>(dataDir: string, label: string, fn: (dir: string) => Promise<T>): Promise<T> {
  const work = join(dataDir, 'work');
  await mkdir(work, { recursive: true, mode: 0o711 });
  await chmod(work, 0o711);
  const dir = await mkdtemp(join(work, `${label}-p${process.pid}-`));
  try {
    await chmod(dir, 0o711);
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
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
    await rm(join(work, name), { recursive: true, force: true });
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

/** Copies a stored object to a local file. */
export async function download(storage: Storage, key: string, path: string, signal?: AbortSignal): Promise<void> {
  await pipeline(await storage.get(key), createWriteStream(path), { signal });
}

/** The Workspaces port on this Hoist's data directory (withWorkspace, swept by sweepWorkspaces). */
export class DataDirWorkspaces implements Workspaces {
  constructor(private readonly dataDir: string) {}

  run<T>(label: string, fn: (dir: string) => Promise<T>): Promise<T> {
    return withWorkspace(this.dataDir, label, fn);
  }
}
