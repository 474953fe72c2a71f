import { chmod, mkdir, mkdtemp, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Workspaces } from '../ports/workspaces.js';
import type { Logger } from '../tokens.js';
import { removeTree } from './remove-tree.js';

/** Where a failure to remove a workspace goes: it never replaces what `fn` resolved or threw. */
export type CleanupLog = Pick<Logger, 'warn'>;

/**
 * Runs `fn` with a fresh directory under `<dataDir>/work`, made when `fn` first asks for it (`dir()`) and removed
 * afterwards whatever happens (removeTree: tenant code may have made it deep or unreadable). Both are 0711 (mkdtemp
 * gives 0700): the sandbox's unprivileged uid must traverse them to bind a directory of the workspace, without being
 * able to list what else is there. A removal that fails is logged to `log` (the next start's sweep tries again) and
 * never replaces `fn`'s result or error.
 */
export async function withWorkspace<T>(
  dataDir: string,
  label: string,
  fn: (dir: () => Promise<string>) => Promise<T>,
  log?: CleanupLog,
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
    if (path)
      await removeTree(path).catch((err: unknown) =>
        warnLeft(log, err, path, 'a workspace was not removed; the next start sweeps it'),
      );
  }
}

/**
 * Removes the workspaces a crashed process left under `<dataDir>/work` (uploaded sources, build
 * trees): those of a process that is gone, and of this very process (it has made none yet when
 * this runs at start). One that cannot be removed is logged to `log` and left for the next sweep: it never stops a
 * start. Returns how many it removed.
 */
export async function sweepWorkspaces(dataDir: string, log?: CleanupLog): Promise<number> {
  const work = join(dataDir, 'work');
  let removed = 0;
  for (const name of await readdir(work).catch(() => [] as string[])) {
    const pid = Number(/-p(\d+)-[^-]+$/.exec(name)?.[1] ?? 0);
    if (pid && pid !== process.pid && alive(pid)) continue;
    const gone = await removeTree(join(work, name)).then(
      () => true,
      (err: unknown) => {
        warnLeft(log, err, join(work, name), 'a workspace left behind was not removed; the next sweep tries again');
        return false;
      },
    );
    if (gone) removed++;
  }
  return removed;
}

/** Reports a workspace left on disk to `log`, or without one to stderr (never as a failure of the caller). */
function warnLeft(log: CleanupLog | undefined, err: unknown, workspace: string, what: string): void {
  if (log) log.warn({ err, workspace }, what);
  else console.warn(`hoist: ${what}: ${err instanceof Error ? err.message : String(err)}`);
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
  constructor(
    private readonly dataDir: string,
    /** Where a workspace that could not be removed is reported (stderr without). */
    private readonly log?: CleanupLog,
  ) {}

  run<T>(label: string, fn: (dir: string) => Promise<T>): Promise<T> {
    return withWorkspace(this.dataDir, label, async (dir) => fn(await dir()), this.log);
  }
}
