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

/**
 * ZIPs the folder `root` with yazl: every file below it except `.git`, `node_modules` (unless
 * asked) and what `.gitignore` and `.hoistignore` files exclude. Nothing outside `root` goes in: a
 * symlink pointing out of it is skipped with a warning; one pointing inside is stored as the file
 * it points to (the archive holds no symlinks, which Hoist refuses).
 */
export async function packFolder(root: string, options: PackOptions = {}): Promise<PackedFolder> {
  const top = realpathSync(root);
  const files: { name: string; path: string }[] = [];
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
    const entries = readdirSync(dir, { withFileTypes: true }).sort((a: Dirent, b: Dirent) => (a.name < b.name ? -1 : 1));
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

  const zip = new yazl.ZipFile();
  for (const f of files) zip.addFile(f.path, f.name, { mtime: new Date(lstatSync(f.path).mtimeMs) });
  zip.end();
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve, reject) => zip.outputStream.on('data', (c: Buffer) => chunks.push(c)).on('end', resolve).on('error', reject));
  return { zip: Buffer.concat(chunks), files: files.map((f) => f.name), warnings };
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
