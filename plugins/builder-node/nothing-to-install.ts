import { lstat, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Fields of package.json that make an install fetch something. */
const DEPENDENCY_FIELDS = [
  'dependencies',
  'devDependencies',
  'optionalDependencies',
  'peerDependencies',
  'bundleDependencies',
  'bundledDependencies',
];
/** The package's own lifecycle scripts that an install runs. */
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'preprepare', 'prepare', 'postprepare'];

/**
 * True when installing the project in `workspace` would do nothing: its package.json declares no
 * dependency of any kind, no workspaces and no script an install runs. False when in doubt (no
 * readable package.json, a field of an unexpected type).
 */
export async function nothingToInstall(workspace: string): Promise<boolean> {
  const file = join(workspace, 'package.json');
  let pkg: unknown;
  try {
    // The upload's own file: a regular file of at most 1 MB (as the analyzer reads it), never a link.
    const info = await lstat(file);
    if (!info.isFile() || info.size > 1024 * 1024) return false;
    pkg = JSON.parse((await readFile(file, 'utf8')).replace(/^\uFEFF/, ''));
  } catch {
    return false; // the install reports what is wrong with it
  }
  if (typeof pkg !== 'object' || pkg === null || Array.isArray(pkg)) return false;
  const fields = pkg as Record<string, unknown>;
  if (fields.workspaces !== undefined) return false;
  for (const name of DEPENDENCY_FIELDS) {
    const value = fields[name];
    if (value === undefined) continue;
    const empty = Array.isArray(value)
      ? value.length === 0
      : typeof value === 'object' && value !== null && Object.keys(value).length === 0;
    if (!empty) return false;
  }
  const scripts = fields.scripts;
  if (scripts === undefined) return true;
  if (typeof scripts !== 'object' || scripts === null) return false;
  return !INSTALL_SCRIPTS.some((name) => name in scripts);
}
