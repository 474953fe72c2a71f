import { createHash } from 'node:crypto';
import { lstatSync, readFileSync, realpathSync, statSync, type Dirent, readdirSync } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';
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

/** The manifest of `files`: each one read once, hashed and counted. */
export async function manifestOf(files: FolderFile[]): Promise<ManifestEntry[]> {
  return files.map((f) => {
    const bytes = readFileSync(f.path);
    return { path: f.name, sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length };
  });
}

/** A ZIP (yazl, mtimes kept) of `files`. */
export async function zipFiles(files: FolderFile[]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const f of files) zip.addFile(f.path, f.name, { mtime: new Date(lstatSync(f.path).mtimeMs) });
  zip.end();
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve, reject) =>
    zip.outputStream
      .on('data', (c: Buffer) => chunks.push(c))
      .on('end', resolve)
      .on('error', reject),
  );
  return Buffer.concat(chunks);
}

/**
 * The files of the folder `root` to deploy: every file below it except `.git`, `node_modules` (unless
 * asked) and what `.gitignore` and `.hoistignore` files exclude. Nothing outside `root` goes in: a
 * symlink pointing out of it is skipped with a warning; one pointing inside counts as the file it
 * points to (the archive holds no symlinks, which Hoist refuses).
 */
export function listFolder(root: string, options: PackOptions = {}): { files: FolderFile[]; warnings: string[] } {
  const top = realpathSync(root);
  const files: FolderFile[] = [];
  const warnings: string[] = [];
  const seenDirs = new Set<string>();

  const walk = (dir: string, rel: string, inherited: Rules[]) => {
    const real = realpathSync(dir);
    if (seenDirs.has(real)) return warnings.push(`${rel || '.'}: skipped, a symlink loop`);
    seenDirs.add(real);
    const rules = [...inherited];
    for (const name of IGNORE_FILES) {
      const text = readIfFile(join(dir, name));
      if (text !== null) rules.push({ base: rel, rules: ignore().add(text) });
    }
    const entries = readdirSync(dir, { withFileTypes: true }).sort((a: Dirent, b: Dirent) =>
      a.name < b.name ? -1 : 1,
    );
    for (const entry of entries) {
      const name = rel ? `${rel}/${entry.name}` : entry.name;
      const path = join(dir, entry.name);
      if (entry.name === '.git') continue;
      let isDir = entry.isDirectory();
      let target = path;
      if (entry.isSymbolicLink()) {
        const resolved = resolveInside(path, top);
        if (!resolved) {
          warnings.push(`${name}: skipped, a symlink to outside the folder`);
          continue;
        }
        target = resolved;
        isDir = statSync(resolved).isDirectory();
      } else if (!isDir && !entry.isFile()) continue;
      if (isDir && entry.name === 'node_modules' && !options.includeNodeModules) continue;
      if (ignored(rules, name, isDir)) continue;
      if (isDir) walk(target, name, rules);
      else files.push({ name, path: target });
    }
  };
  walk(top, '', []);
  return { files, warnings };
}

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
