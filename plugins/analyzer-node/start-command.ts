import type { FrameworkTraits } from './frameworks.js';
import type { PackageJson } from './package-json.js';
import { quoted } from './quoted.js';
import { runScript, type PackageManager } from './package-manager.js';

/** A start command and why it was chosen. */
export interface StartChoice {
  command: string;
  reason: string;
}

/** The file `main` points to, as Node resolves it, when it is in the tree. */
function mainFile(main: string, files: string[]): string | null {
  const m = main.replace(/^\.\//, '').replace(/\/$/, '');
  return [m, `${m}.js`, `${m}/index.js`].find((f) => files.includes(f)) ?? null;
}

/**
 * How a Node.js service starts: `scripts.start`, else the framework's server command, else
 * `main`, else server.{js,mjs,cjs}, else index.js; null when there is none (the project setting
 * start_command is applied by the caller).
 */
export function findStartCommand(
  pkg: PackageJson,
  files: string[],
  pm: PackageManager,
  framework: FrameworkTraits | null,
): StartChoice | null {
  if (pkg.scripts.start)
    return {
      command: runScript(pm, 'start'),
      reason: `scripts.start in package.json ("${quoted(pkg.scripts.start)}")`,
    };
  if (framework?.start)
    return { command: framework.start, reason: `the ${framework.name} server (no start script in package.json)` };
  const main = pkg.main && mainFile(pkg.main, files);
  if (main) return { command: `node ${main}`, reason: `"main": "${quoted(pkg.main ?? '')}" in package.json` };
  const file = ['server.js', 'server.mjs', 'server.cjs', 'index.js'].find((f) => files.includes(f));
  if (file) return { command: `node ${file}`, reason: `${file} at the root` };
  return null;
}
