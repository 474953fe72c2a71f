import {
  HEADERS_FILE,
  MAX_BYTES,
  parseHeaders,
  parseRedirects,
  REDIRECTS_FILE,
  type HeaderRule,
  type RedirectRule,
} from '../../../core/ports/site-rules.cjs';
import { StageError } from '../../../core/errors.js';

/** The rules of a static site's `_redirects` and `_headers` files, as a release keeps them (none without). */
export interface SiteRules {
  redirects?: RedirectRule[];
  headers?: HeaderRule[];
}

/** Each file at the root of a static site whose rules Hoist follows: its key, parser and error code. */
const FILES = {
  [REDIRECTS_FILE]: { key: 'redirects', parse: parseRedirects, code: 'deploy_redirects_invalid' },
  [HEADERS_FILE]: { key: 'headers', parse: parseHeaders, code: 'deploy_headers_invalid' },
} as const;

/** The names of those files. */
export const SITE_RULE_FILES = Object.keys(FILES) as (keyof typeof FILES)[];

/** True when `path` (relative to the site's root) is one of those files. */
export const isSiteRuleFile = (path: string): path is keyof typeof FILES => Object.hasOwn(FILES, path);

/** The refusals a StageError names at most; past them it counts the rest. */
const SHOWN = 5;

/** Throws the file's StageError (`deploy_redirects_invalid`, `deploy_headers_invalid`) when it is too large to read. */
export function checkSiteRuleSize(path: keyof typeof FILES, size: number): void {
  if (size > MAX_BYTES)
    throw new StageError(FILES[path].code, `${path} is ${size} bytes: at most ${MAX_BYTES} are read`, { file: path });
}

/**
 * Adds to `into` the rules of a static site's `_redirects` or `_headers` file (`path`; `size` bytes; `bytes`: its
 * content, absent when it was not read whole), checked before anything of the release is stored. Its StageError
 * (`deploy_redirects_invalid`, `deploy_headers_invalid`) names each refused line (the first five) and why, or says
 * the file is too large.
 */
export function addSiteRules(into: SiteRules, path: keyof typeof FILES, bytes: Buffer | undefined, size: number): void {
  checkSiteRuleSize(path, size);
  const { key, parse, code } = FILES[path];
  if (!bytes) throw new StageError(code, `${path} could not be read`, { file: path });
  const { rules, errors } = parse(bytes.toString('utf8'));
  if (errors.length === 0) {
    (into as Record<string, unknown>)[key] = rules;
    return;
  }
  const said = errors.slice(0, SHOWN).map((e) => (e.line ? `line ${e.line}: ${e.message}` : e.message));
  if (errors.length > SHOWN) said.push(`and ${errors.length - SHOWN} more`);
  throw new StageError(code, `${path} has rules Hoist cannot follow: ${said.join('; ')}`, {
    file: path,
    lines: errors.map((e) => e.line),
  });
}
