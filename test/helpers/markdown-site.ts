import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

/** The example plugin's folder, as the `plugins` setting names it. */
export const markdownSitePath = resolve('examples/plugin-markdown-site');

/**
 * Why the example plugin cannot load here, or null: its own node_modules (scripts/setup.sh installs
 * them) and the compiled plugin API it imports (`npm run build`, run at install) must be there.
 */
export function markdownSiteMissing(): string | null {
  if (!existsSync(resolve(markdownSitePath, 'node_modules/markdown-it')))
    return 'run npm ci --prefix examples/plugin-markdown-site (scripts/setup.sh does)';
  if (!existsSync(resolve('dist/core/plugin-api.js'))) return 'run npm run build (the compiled hoist/plugin-api)';
  return null;
}
