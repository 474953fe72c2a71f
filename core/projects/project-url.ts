import type { HoistConfig } from '../../config/schema.js';
import { SLUG_MAX } from './slug.js';

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

/**
 * The host label of the preview an operation deploys: `<slug>--<its id's first 8 hex digits>`. A slug never holds
 * `--` (slugify), so no project's own host can take it; a long slug is cut so the label stays one DNS label.
 */
export function previewLabel(slug: string, operationId: string): string {
  return `${slug.slice(0, SLUG_MAX - 10).replace(/-+$/, '')}--${operationId.replace(/-/g, '').slice(0, 8)}`;
}

/** The public URL of the preview operation `operationId` deploys for the project of `slug`. */
export function previewUrl(
  config: Pick<HoistConfig, 'appsScheme' | 'appsDomain' | 'appsPort' | 'edgePort'>,
  slug: string,
  operationId: string,
): string {
  return hostUrl(config, `${previewLabel(slug, operationId)}.${config.appsDomain}`);
}
