import { lstat, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The start commands that only run package.json's start script through npm. */
const NPM_START = /^\s*npm\s+(?:start|run\s+start|run-script\s+start)\s*$/;

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** npm's package variables (npm RFC 183: name, version, config, engines, bin), flattened as npm does. */
function packageVars(value: unknown, prefix: string, out: [string, string][]): [string, string][] {
  if (value === undefined) return out;
  if (value === null || value === false) out.push([prefix, '']);
  else if (Array.isArray(value)) value.forEach((item, i) => packageVars(item, `${prefix}_${i}`, out));
  else if (typeof value === 'object')
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) packageVars(v, `${prefix}_${k}`, out);
  else out.push([prefix, String(value)]);
  return out;
}

/**
 * The command a release in `dir` runs for its start command `command`. `npm start` (`npm run start`,
 * `npm run-script start`) of a package whose start script npm would run alone becomes that script,
 * run as npm runs it: `/bin/sh -c` in the release's directory, with `node_modules/.bin` first on PATH
 * and the variables npm gives a script (npm_lifecycle_*, npm_package_json and the package's own:
 * name, version, config, engines, bin). The release then starts without loading npm, which costs
 * about 150 ms of CPU per start, and several times that on a busy machine. Anything else is returned
 * as it is, and so is `npm start` when npm would do more: a prestart or poststart script, a project
 * `.npmrc`, npm settings among the release's variables (`env`), or a package.json that is not a plain
 * file of at most 1 MB holding a start script.
 */
export async function directStart(command: string, dir: string, env: Record<string, string>): Promise<string> {
  if (!NPM_START.test(command) || Object.keys(env).some((k) => /^npm_config_/i.test(k))) return command;
  if (await lstat(join(dir, '.npmrc')).catch(() => null)) return command;
  let pkg: Record<string, unknown>;
  try {
    const file = join(dir, 'package.json');
    const info = await lstat(file);
    if (!info.isFile() || info.size > 1024 * 1024) return command;
    pkg = JSON.parse((await readFile(file, 'utf8')).replace(/^\uFEFF/, ''));
  } catch {
    return command;
  }
  const scripts = pkg?.scripts as Record<string, unknown> | undefined;
  if (typeof scripts !== 'object' || scripts === null || typeof scripts.start !== 'string') return command;
  if ('prestart' in scripts || 'poststart' in scripts) return command;
  const { name, version, config, engines, bin } = pkg;
  const vars = [
    ...packageVars({ name, version, config, engines, bin }, 'npm_package', []),
    ['npm_lifecycle_event', 'start'],
    ['npm_lifecycle_script', scripts.start],
    ['npm_command', 'start'],
  ];
  const assignments = vars.filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k)).map(([k, v]) => `${k}=${shellQuote(v)}`);
  return [
    'PATH="$PWD/node_modules/.bin:$PATH"',
    'npm_package_json="$PWD/package.json"',
    'INIT_CWD="$PWD"',
    ...assignments,
    'exec /bin/sh -c',
    shellQuote(scripts.start),
  ].join(' ');
}
