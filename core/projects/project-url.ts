import type { HoistConfig } from '../../config/schema.js';

/**
 * The public URL of a project: `<appsScheme>://<slug>.<appsDomain>[:port]/`. The port is
 * `appsPort`, else `edgePort`, and is left out when it is the scheme's default (80 / 443).
 */
export function projectUrl(
  config: Pick<HoistConfig, 'appsScheme' | 'appsDomain' | 'appsPort' | 'edgePort'>,
  slug: string,
): string {
  return hostUrl(config, `${slug}.${config.appsDomain}`);
}

/** The public URL of a host the edge serves (a project host or a customer domain), as projectUrl builds it. */
export function hostUrl(config: Pick<HoistConfig, 'appsScheme' | 'appsPort' | 'edgePort'>, host: string): string {
  const port = config.appsPort ?? config.edgePort;
  const implicit = (config.appsScheme === 'http' && port === 80) || (config.appsScheme === 'https' && port === 443);
  return `${config.appsScheme}://${host}${implicit ? '' : `:${port}`}/`;
}
