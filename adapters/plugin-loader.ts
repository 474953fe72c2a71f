import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PORT_TOKENS, SUPPORTED_PLUGIN_API_VERSIONS, type PluginDefinition } from '../core/plugin.js';
import { KernelError } from './kernel-error.js';

/**
 * The plugins of the `plugins` setting (comma-separated npm package names or absolute paths, see
 * config/load.ts), each module's default export being a PluginDefinition or an array of them.
 * Throws a KernelError naming the package and what is wrong: it cannot be loaded, it exports no
 * definition, a field is malformed, its plugin API version is not supported, its id is taken.
 */
export async function loadPlugins(list: string | undefined, known: PluginDefinition[]): Promise<PluginDefinition[]> {
  const loaded: PluginDefinition[] = [];
  for (const source of (list ?? '').split(',').filter(Boolean)) {
    const fail = (problem: string): never => {
      throw new KernelError(`plugin package ${source} (plugins, HOIST_PLUGINS): ${problem}`);
    };
    let mod: { default?: unknown };
    try {
      mod = await import(isAbsolute(source) ? pathToFileURL(entryOf(source)).href : source);
    } catch (err) {
      return fail(`cannot be loaded: ${(err as Error).message}`);
    }
    if (mod.default === undefined) fail('has no default export (a PluginDefinition, or an array of them)');
    for (const def of [mod.default].flat()) {
      const problem = malformed(def);
      if (problem) fail(problem);
      const plugin = def as PluginDefinition;
      const taken = [...known, ...loaded].find(
        (p) => p.id === plugin.id || (p.port === plugin.port && p.name === plugin.name),
      );
      if (taken?.id === plugin.id) fail(`plugin id ${plugin.id} is taken by another plugin`);
      if (taken) fail(`${plugin.port} plugin name ${JSON.stringify(plugin.name)} is taken by ${taken.id}`);
      loaded.push(plugin);
    }
  }
  return loaded;
}

/** The module file of a path: itself, or for a folder its package.json's `exports` or `main`, else index.js. */
function entryOf(path: string): string {
  if (!existsSync(path) || !statSync(path).isDirectory()) return path;
  const manifest = join(path, 'package.json');
  if (!existsSync(manifest)) return join(path, 'index.js');
  const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { exports?: unknown; main?: string };
  const root = (pkg.exports as Record<string, unknown> | undefined)?.['.'] ?? pkg.exports;
  const target =
    typeof root === 'string' ? root : ((root as { import?: string; default?: string } | undefined)?.import ?? null);
  return join(path, target ?? (root as { default?: string } | undefined)?.default ?? pkg.main ?? 'index.js');
}

/** What is wrong with `def` as a PluginDefinition, or null. */
function malformed(def: unknown): string | null {
  if (!def || typeof def !== 'object') return `exports ${typeof def}, not a PluginDefinition`;
  const d = def as Record<string, unknown>;
  const label = typeof d.id === 'string' ? `plugin ${d.id}: ` : '';
  if (typeof d.apiVersion !== 'number')
    return `${label}apiVersion is missing (the plugin API version it was written for)`;
  const supported = SUPPORTED_PLUGIN_API_VERSIONS.join(', ');
  if (!SUPPORTED_PLUGIN_API_VERSIONS.includes(d.apiVersion))
    return `${label}written for plugin API version ${d.apiVersion}; this Hoist supports version ${supported}`;
  if (typeof d.id !== 'string' || !/^[a-z][a-z0-9-]{0,62}$/.test(d.id))
    return 'id must be a string of lowercase letters, digits and dashes (capability first: analyzer-markdown)';
  if (typeof d.port !== 'string' || !(d.port in PORT_TOKENS))
    return `${label}unknown port ${JSON.stringify(d.port)}; ports: ${Object.keys(PORT_TOKENS).join(', ')}`;
  if (typeof d.name !== 'string' || d.name === '') return `${label}name must be a non-empty string`;
  if (!d.deps || typeof d.deps !== 'object') return `${label}deps must be an object of tokens ({} for none)`;
  for (const [key, t] of Object.entries(d.deps)) if (typeof t !== 'symbol') return `${label}deps.${key} is not a token`;
  if (typeof d.create !== 'function') return `${label}create must be a function`;
  if (d.entities !== undefined && !Array.isArray(d.entities)) return `${label}entities must be an array`;
  return null;
}
