import { token } from '../tokens.js';

/**
 * Scratch directories on Hoist's data disk, for a plugin that needs room for a while (a deployer
 * unpacking an artifact or laying out an image's build context). Core provides it: every directory
 * is fresh, removed when done, and swept at the next start when a crash left it behind.
 */
export interface Workspaces {
  /**
   * Runs `fn` in a fresh empty directory and removes it afterwards, whatever happens; resolves with
   * what `fn` resolves. `label` (a few letters and digits) starts the directory's name. The
   * directory is on the same file system as the data directory, so a file in it can be renamed there.
   */
  run<T>(label: string, fn: (dir: string) => Promise<T>): Promise<T>;
}

export const WORKSPACES = token<Workspaces>('hoist.Workspaces');
