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
 * The fields of the project's package.json as uploaded, or null when in doubt: no readable package.json (absent, a
 * link, over 1 MB, not JSON) or not an object.
 */
async function packageFields(workspace: string): Promise<Record<string, unknown> | null> {
  const file = join(workspace, 'package.json');
  let pkg: unknown;
  try {
    // The upload's own file: a regular file of at most 1 MB (as the analyzer reads it), never a link.
    const info = await lstat(file);
    if (!info.isFile() || info.size > 1024 * 1024) return null;
    pkg = JSON.parse((await readFile(file, 'utf8')).replace(/^\uFEFF/, ''));
  } catch {
    return null; // the install reports what is wrong with it
  }
  return typeof pkg === 'object' && pkg !== null && !Array.isArray(pkg) ? (pkg as Record<string, unknown>) : null;
}

/** True when `value`, a dependency field of package.json, is absent or empty (false for anything unexpected). */
const declaresNone = (value: unknown) =>
  value === undefined ||
  (Array.isArray(value)
    ? value.length === 0
    : typeof value === 'object' && value !== null && Object.keys(value).length === 0);

/**
 * True when installing the project in `workspace` would do nothing: its package.json declares no
 * dependency of any kind, no workspaces and no script an install runs. False when in doubt (no
 * readable package.json, a field of an unexpected type).
 */
export async function nothingToInstall(workspace: string): Promise<boolean> {
  const fields = await packageFields(workspace);
  if (!fields || fields.workspaces !== undefined) return false;
  if (!DEPENDENCY_FIELDS.every((name) => declaresNone(fields[name]))) return false;
  const scripts = fields.scripts;
  if (scripts === undefined) return true;
  if (typeof scripts !== 'object' || scripts === null) return false;
  return !INSTALL_SCRIPTS.some((name) => name in scripts);
}

/**
 * True when `npm prune --omit=dev` after an npm install of the project in `workspace` would remove nothing: its
 * package.json declares no devDependencies and no workspaces (whose own devDependencies an install brings). Only
 * devDependencies make an installed package dev, and npm's install removes the packages the project does not
 * declare (an uploaded node_modules' extra ones too). False when in doubt.
 */
export async function nothingToPrune(workspace: string): Promise<boolean> {
  const fields = await packageFields(workspace);
  return !!fields && fields.workspaces === undefined && declaresNone(fields.devDependencies);
}
