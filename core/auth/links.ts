import type { HoistConfig } from '../../config/schema.js';

/**
 * The absolute URL of API `path` (e.g. `/api/v1/auth/...`) for links in mail: `publicUrl`, else
 * http://localhost:<port>.
 */
export function apiLink(config: HoistConfig, path: string): string {
  return `${(config.publicUrl ?? `http://localhost:${config.port}`).replace(/\/+$/, '')}${path}`;
}
