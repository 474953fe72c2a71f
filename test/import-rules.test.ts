// Who may import whom (DESIGN.md): plugins import only core/ports/*, core/plugin.ts, core/errors.ts,
// plugins/shared/ and their own folder; core imports no plugin and no adapter.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE = /\.(ts|js|cjs|mjs)$/;

/** Every source file under `dir` (relative to the repository, `/`-separated). */
function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && SOURCE.test(e.name))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)).split(sep).join('/'));
}

/** The relative specifiers a file imports, re-exports, loads with import() or requires. */
export function relativeImports(code: string): string[] {
  const found = code.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)['"](\.{1,2}\/[^'"]*)['"]/g);
  return [...found].map((m) => m[1]);
}

/** Where `specifier`, imported by `file`, points, relative to the repository and without its extension. */
function target(file: string, specifier: string): string {
  return relative(ROOT, resolve(ROOT, dirname(file), specifier))
    .split(sep)
    .join('/')
    .replace(/\.(ts|js|cjs|mjs)$/, '');
}

/** Why a plugin file may not import `to`, or null when it may. */
export function pluginViolation(file: string, to: string): string | null {
  const own = file.split('/').slice(0, 2).join('/');
  if (to.startsWith(`${own}/`)) return null;
  if (to.startsWith('plugins/shared/')) return null;
  if (/^core\/ports\/[^/]+$/.test(to) || to === 'core/plugin' || to === 'core/errors') return null;
  return `${file} imports ${to}`;
}

/** Why a core file may not import `to`, or null when it may. */
export function coreViolation(file: string, to: string): string | null {
  return to.startsWith('plugins/') || to.startsWith('adapters/') ? `${file} imports ${to}` : null;
}

function violations(dir: string, rule: (file: string, to: string) => string | null): string[] {
  return sources(dir).flatMap((file) =>
    relativeImports(readFileSync(join(ROOT, file), 'utf8'))
      .map((s) => rule(file, target(file, s)))
      .filter((v): v is string => v !== null),
  );
}

test('the checks catch what they are for', () => {
  const code = `import a from '../../core/deployments/workspace.js';
    export { b } from "./own.js";
    const c = await import('../deployer-docker/release-image.js');
    import '../../adapters/kernel.js';
    const d = require('./runtime/entry.cjs');`;
  assert.equal(relativeImports(code), [
    '../../core/deployments/workspace.js',
    './own.js',
    '../deployer-docker/release-image.js',
    '../../adapters/kernel.js',
    './runtime/entry.cjs',
  ]);
  const file = 'plugins/deployer-pulumi/pulumi-deployer.ts';
  const bad = relativeImports(code)
    .map((s) => pluginViolation(file, target(file, s)))
    .filter(Boolean);
  assert.equal(bad, [
    `${file} imports core/deployments/workspace`,
    `${file} imports plugins/deployer-docker/release-image`,
    `${file} imports adapters/kernel`,
  ]);
  assert.ok(pluginViolation('plugins/shared/docker/logs.ts', 'plugins/deployer-docker/docker-deployer'));
  assert.ok(coreViolation('core/deployments/stages/deploy.ts', 'adapters/kernel'));
  assert.is(coreViolation('core/plugin.ts', 'config/schema'), null);
});

test('plugins import only core/ports/*, core/plugin.ts, core/errors.ts, plugins/shared/ and their own folder', () => {
  assert.equal(violations('plugins', pluginViolation), []);
});

test('core imports no plugin and no adapter', () => {
  assert.equal(violations('core', coreViolation), []);
});

test.run();
