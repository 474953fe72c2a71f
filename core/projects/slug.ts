import { randomInt } from 'node:crypto';

/** Longest slug: one DNS label. */
export const SLUG_MAX = 63;

// Host names the service may want for itself under the apps domain.
const reserved = new Set(['www', 'api', 'app', 'apps', 'admin', 'edge', 'hoist', 'mail', 'static', 'status', 'docs']);

/** True for a slug a project may not take because the service keeps it. */
export function isReservedSlug(slug: string): boolean {
  return reserved.has(slug);
}

/**
 * A URL-safe slug for `name`: lower-case a-z, 0-9 and single hyphens, at most SLUG_MAX characters,
 * never starting or ending with a hyphen; `project` when nothing usable is left.
 */
export function slugify(name: string): string {
  const s = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, SLUG_MAX)
    .replace(/^-+|-+$/g, '');
  return s || 'project';
}

/** `base` with a short random suffix (`my-site-x7k2`), cut so the result stays within SLUG_MAX. */
export function withSuffix(base: string): string {
  const suffix = Array.from({ length: 4 }, () => '0123456789abcdefghijklmnopqrstuvwxyz'[randomInt(36)]).join('');
  return `${base.slice(0, SLUG_MAX - 5).replace(/-+$/, '')}-${suffix}`;
}
