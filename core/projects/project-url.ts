import type { HoistConfig } from '../../config/schema.js';

/**
 * The public URL of a project: `<appsScheme>://<slug>.<appsDomain>[:port]/`. The port is
 * `appsPort`, else `edgePort`, and is left out when it is the scheme's default (80 / 443).
 */
export function projectUrl(config: Pick<HoistConfig, 'appsScheme' | 'appsDomain' | 'appsPort' | 'edgePort'>, slug: string): string {
  const port = config.appsPort ?? config.edgePort;
  const implicit = (config.appsScheme === 'http' && port === 80) || (config.appsScheme === 'https' && port === 443);
  return `${config.appsScheme}://${slug}.${config.appsDomain}${implicit ? '' : `:${port}`}/`;
}
