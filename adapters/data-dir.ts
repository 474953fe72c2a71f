import { chmodSync, closeSync, lstatSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Mode of the data directory itself: 0711, not 0700. Tenant code runs in the sandbox (bubblewrap)
 * as an unprivileged uid that is not Hoist's, and it must be able to traverse the data directory
 * to reach the workspace bound under `<dataDir>/work/...` and the Node.js releases under
 * `<dataDir>/releases/...`; the execute bit lets it through without letting it list anything.
 */
export const DATA_DIR_MODE = 0o711;
/**
 * Entries the sandbox's uid passes through on its way to its own directory (see DATA_DIR_MODE), and
 * `sandbox/`, where sandbox-bwrap keeps the synthetic /etc files every run reads.
 */
export const SANDBOX_PATHS: Record<string, number> = { work: 0o711, releases: 0o711, sandbox: 0o711 };
/** Every other directory in the data directory (storage, cache, pulumi, ...): Hoist's alone. */
export const PRIVATE_DIR_MODE = 0o700;
/** Every file in the data directory: the SQLite database, jwt.key, master-keys.json hold secrets. */
export const SECRET_FILE_MODE = 0o600;

/**
 * Creates the data directory, or corrects an existing one, at every start: the directory 0711,
 * `work/`, `releases/` and `sandbox/` 0711 (made when missing), every other directory in it 0700 and every file in it
 * 0600 (files
 * deeper down are private through their directory). A symlink is left as it is. Throws naming the
 * path when a mode cannot be set (the directory belongs to another user).
 */
export function secureDataDir(dataDir: string): void {
  mkdirSync(dataDir, { recursive: true, mode: DATA_DIR_MODE });
  setMode(dataDir, DATA_DIR_MODE);
  // Made here, so they have their mode from the first (the deployers and workspaces make them when missing).
  for (const [name, mode] of Object.entries(SANDBOX_PATHS)) mkdirSync(join(dataDir, name), { recursive: true, mode });
  for (const name of readdirSync(dataDir)) {
    const path = join(dataDir, name);
    const s = lstatSync(path, { throwIfNoEntry: false });
    if (!s || s.isSymbolicLink()) continue;
    const want = s.isDirectory() ? (SANDBOX_PATHS[name] ?? PRIVATE_DIR_MODE) : SECRET_FILE_MODE;
    if ((s.mode & 0o7777) !== want) setMode(path, want);
  }
}

/**
 * Creates `path` (a file holding secrets) empty with mode 0600 when it does not exist, so it is
 * never readable by others even for a moment (SQLite creates its -wal and -shm files with the
 * database file's mode); an existing one is set to 0600.
 */
export function secretFile(path: string): void {
  try {
    closeSync(openSync(path, 'wx', SECRET_FILE_MODE));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  setMode(path, SECRET_FILE_MODE);
}

function setMode(path: string, mode: number): void {
  try {
    chmodSync(path, mode);
  } catch (err) {
    throw new Error(
      `cannot set the mode of ${path} to ${mode.toString(8)} (is it Hoist's?): ${(err as Error).message}`,
      { cause: err },
    );
  }
}
