import { createHash } from 'node:crypto';
import {
  closeSync,
  createReadStream,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  realpathSync,
  statSync,
  type Dirent,
} from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';
import type { Readable } from 'node:stream';
import ignore, { type Ignore } from 'ignore';
import yazl from 'yazl';

/** A packed folder: the ZIP, the paths it holds (sorted), and what was left out with a warning. */
export interface PackedFolder {
  zip: Buffer;
  files: string[];
  warnings: string[];
}

export interface PackOptions {
  /** Include node_modules folders (left out by default: Hoist installs dependencies itself). */
  includeNodeModules?: boolean;
}

/** Files that tell what to leave out; each applies to its own folder and below, like git's. */
export const IGNORE_FILES = ['.gitignore', '.hoistignore'];

interface Rules {
  base: string;
  rules: Ignore;
}

/** A file to deploy: its name in the site (`/`-separated) and where it is on disk. */
export interface FolderFile {
  name: string;
  path: string;
}

/** One file of an upload manifest: its path in the site, the SHA-256 of its bytes and its size. */
export interface ManifestEntry {
  path: string;
  sha256: string;
  size: number;
}

/**
 * ZIPs the folder `root` with yazl: the files `listFolder` finds (sorted), each stored as the file a
 * symlink inside the folder points to.
 */
export async function packFolder(root: string, options: PackOptions = {}): Promise<PackedFolder> {
  const { files, warnings } = listFolder(root, options);
  return { zip: await zipFiles(files), files: files.map((f) => f.name), warnings };
}

/**
 * The manifest of `files`: each one read once, in pieces (memory does not grow with a file's size, and a file
 * past 2 GiB is hashed too), hashed and counted.
 */
export async function manifestOf(files: FolderFile[]): Promise<ManifestEntry[]> {
  const piece = Buffer.allocUnsafe(1 << 20);
  return files.map((f) => {
    const hash = createHash('sha256');
    let size = 0;
    const fd = openSync(f.path, 'r');
    try {
      for (let n; (n = readSync(fd, piece, 0, piece.length, null)) > 0; size += n) hash.update(piece.subarray(0, n));
    } finally {
      closeSync(fd);
    }
    return { path: f.name, sha256: hash.digest('hex'), size };
  });
}

/** A ZIP (yazl, mtimes kept) of `files`. */
export async function zipFiles(files: FolderFile[]): Promise<Buffer> {
  return (await zipWithin(files, Infinity))!;
}

/**
 * A ZIP (yazl, mtimes kept) of `files`, or null as soon as it passes `limit` bytes: packing stops there (each file
 * is opened only when its turn comes), so a folder far larger than any upload costs no more memory than the limit.
 * A file that is gone or changed size since it was listed rejects, as an error to report, not a crash.
 */
export async function zipWithin(files: FolderFile[], limit: number): Promise<Buffer | null> {
  const zip = new yazl.ZipFile();
  const chunks: Buffer[] = [];
  let size = 0;
  let stopped = false;
  let fail: (err: Error) => void = () => {};
  const whole = new Promise<boolean>((resolve, reject) => {
    fail = (err) => stopped || reject(err);
    zip.on('error', fail);
    zip.outputStream
      .on('data', (c: Buffer) => {
        chunks.push(c);
        if ((size += c.length) <= limit || stopped) return;
        stopped = true;
        chunks.length = 0;
        (zip.outputStream as Readable).destroy();
        resolve(false);
      })
      .on('end', () => resolve(true))
      .on('error', fail);
  });
  for (const f of files) {
    const { mtimeMs, mode, size: bytes } = lstatSync(f.path);
    zip.addReadStreamLazy(f.name, { mtime: new Date(mtimeMs), mode, size: bytes }, (open) =>
      open(null, createReadStream(f.path).on('error', fail)),
    );
  }
  zip.end();
  return (await whole) ? Buffer.concat(chunks) : null;
}

/**
 * The files of the folder `root` to deploy: every file below it except `.git`, `node_modules` (unless
 * asked) and what `.gitignore` and `.hoistignore` files exclude. Nothing outside `root` goes in: a
 * symlink pointing out of it is skipped with a warning; one pointing inside counts as the file it
 * points to (the archive holds no symlinks, which Hoist refuses), but only when that file (or folder)
 * would go in under its own name: a symlink to something left out (`.git/config`, an ignored `.env`, a
 * folder an ignore file names), or to what is neither a file nor a folder (a FIFO would block the read
 * forever), is skipped with a warning, so a symlink cannot publish what the rules keep back.
 */
export function listFolder(root: string, options: PackOptions = {}): { files: FolderFile[]; warnings: string[] } {
  const top = realpathSync(root);
  const files: FolderFile[] = [];
  const warnings: string[] = [];
  const seenDirs = new Set<string>();
  const leftOut = (name: string, isDir: boolean, rules: Rules[]) => {
    const last = name.slice(name.lastIndexOf('/') + 1);
    return (
      last === '.git' ||
      (isDir && last === 'node_modules' && !options.includeNodeModules) ||
      ignored(rules, name, isDir)
    );
  };
  // The rules in force in each folder below `top`, by its real path from `top` ('' for `top`), read once.
  const realRules = new Map<string, Rules[]>();
  const rulesAt = (rel: string, inherited: Rules[]) => {
    let rules = realRules.get(rel);
    if (!rules) realRules.set(rel, (rules = rulesIn(join(top, rel), rel, inherited)));
    return rules;
  };
  // Whether `real` (a real path inside `top`) is left out where it is: it, or a folder it is in, is .git,
  // node_modules or ignored by the ignore files of its own folders.
  const leftOutWhereItIs = (real: string, isDir: boolean): boolean => {
    const parts = relative(top, real).split(sep);
    let rules = rulesAt('', []);
    for (let i = 0; i < parts.length; i++) {
      const name = parts.slice(0, i + 1).join('/');
      const last = i === parts.length - 1;
      if (leftOut(name, !last || isDir, rules)) return true;
      if (!last) rules = rulesAt(name, rules);
    }
    return false;
  };

  const walk = (dir: string, rel: string, inherited: Rules[]) => {
    const real = realpathSync(dir);
    if (seenDirs.has(real)) return warnings.push(`${shown(rel || '.')}: skipped, a symlink loop`);
    seenDirs.add(real);
    // Reached through a symlink (its name in the site is not where it is): what is in it must go in where it is too.
    const moved = relative(top, real).split(sep).join('/') !== rel;
    const rules = rulesIn(dir, rel, inherited);
    const entries = readdirSync(dir, { withFileTypes: true }).sort((a: Dirent, b: Dirent) =>
      a.name < b.name ? -1 : 1,
    );
    for (const entry of entries) {
      const name = rel ? `${rel}/${entry.name}` : entry.name;
      const path = join(dir, entry.name);
      if (entry.name === '.git') continue;
      let isDir = entry.isDirectory();
      let target = path;
      const link = entry.isSymbolicLink();
      if (link) {
        const resolved = resolveInside(path, top);
        if (!resolved) {
          warnings.push(`${shown(name)}: skipped, a symlink to outside the folder`);
          continue;
        }
        const kind = statSync(resolved);
        if (!kind.isFile() && !kind.isDirectory()) {
          warnings.push(`${shown(name)}: skipped, a symlink to something neither a file nor a folder`);
          continue;
        }
        target = resolved;
        isDir = kind.isDirectory();
      } else if (!isDir && !entry.isFile()) continue;
      if (leftOut(name, isDir, rules) || (moved && leftOutWhereItIs(join(real, entry.name), isDir))) continue;
      if (link && leftOutWhereItIs(target, isDir)) {
        const to = relative(top, target).split(sep).join('/');
        warnings.push(`${shown(name)}: skipped, a symlink to ${shown(to)}, which is left out`);
        continue;
      }
      if (isDir) walk(target, name, rules);
      else files.push({ name, path: target });
    }
  };
  walk(top, '', []);
  return { files, warnings };
}

// `inherited` and the rules of the ignore files in `dir` (whose name in the site is `rel`).
function rulesIn(dir: string, rel: string, inherited: Rules[]): Rules[] {
  const rules = [...inherited];
  for (const name of IGNORE_FILES) {
    const text = readIfFile(join(dir, name));
    if (text !== null) rules.push({ base: rel, rules: ignore().add(text) });
  }
  return rules;
}

// A file name as a warning shows it: JSON-quoted when it holds a control character, so a name cannot drive the
// terminal (escape sequences) or pass for another line.
const shown = (name: string) =>
  /[\x00-\x1f\x7f-\x9f]/.test(name)
    ? JSON.stringify(name).replace(/[\x7f-\x9f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    : name;

function readIfFile(path: string): string | null {
  try {
    return lstatSync(path).isFile() ? readFileSync(path, 'utf8') : null;
  } catch {
    return null;
  }
}

// The real path of a symlink's target when it lies inside `top`; null when outside or dangling.
function resolveInside(path: string, top: string): string | null {
  try {
    const real = realpathSync(path);
    const rel = relative(top, real);
    return rel && rel.split(sep)[0] !== '..' && !isAbsolute(rel) ? real : null;
  } catch {
    return null;
  }
}

function ignored(rules: Rules[], name: string, isDir: boolean): boolean {
  for (const r of rules) {
    const rel = r.base ? name.slice(r.base.length + 1) : name;
    if (r.rules.ignores(isDir ? `${rel}/` : rel)) return true;
  }
  return false;
}
