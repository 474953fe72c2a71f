import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** The repository's root, for the absolute imports of a script runUnprivileged runs. */
export const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The user runUnprivileged runs as when this process is root (nobody). */
export const UNPRIVILEGED_UID = 65534;

/**
 * Runs the ES module `code` (TypeScript, through tsx; `REPO` in it stands for the repository's root) as Hoist runs
 * unprivileged: as nobody when this process is root, else as this user. Resolves its standard output; rejects when it
 * exits with an error. `env` is added to its environment.
 */
export async function runUnprivileged(code: string, env: Record<string, string> = {}): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'hoist-unprivileged-'));
  chmodSync(dir, 0o755);
  const script = join(dir, 'script.mts');
  writeFileSync(script, code.replaceAll('REPO', REPO), { mode: 0o644 });
  const node = [process.execPath, '--import', 'tsx', script];
  const root = process.getuid?.() === 0;
  const [cmd, ...args] = root
    ? ['setpriv', `--reuid=${UNPRIVILEGED_UID}`, `--regid=${UNPRIVILEGED_UID}`, '--clear-groups', '--', ...node]
    : node;
  const { stdout } = await promisify(execFile)(cmd!, args, {
    cwd: REPO,
    env: { ...process.env, HOME: dir, ...env },
  });
  return stdout;
}
