import {
  MAX_BYTES,
  parseRedirects,
  REDIRECTS_FILE,
  type RedirectRule,
} from '../../../core/deployments/site-redirects.cjs';
import { StageError } from '../../../core/errors.js';

export { REDIRECTS_FILE };

/** The refusals a StageError names at most; past them it counts the rest. */
const SHOWN = 5;

const FILE = { file: REDIRECTS_FILE };

/** Throws StageError `deploy_redirects_invalid` when a `_redirects` file of `size` bytes is too large to read. */
export function checkRedirectsSize(size: number): void {
  if (size > MAX_BYTES)
    throw new StageError(
      'deploy_redirects_invalid',
      `${REDIRECTS_FILE} is ${size} bytes: at most ${MAX_BYTES} are read`,
      FILE,
    );
}

/**
 * The rules of a static site's `_redirects` file (`size` bytes; `bytes`: its content, absent when it was not read
 * whole), checked before anything of the release is stored. StageError `deploy_redirects_invalid` names each
 * refused line (the first five) and why, or says the file is too large.
 */
export function checkedRedirects(bytes: Buffer | undefined, size: number): RedirectRule[] {
  checkRedirectsSize(size);
  if (!bytes) throw new StageError('deploy_redirects_invalid', `${REDIRECTS_FILE} could not be read`, FILE);
  const { rules, errors } = parseRedirects(bytes.toString('utf8'));
  if (errors.length === 0) return rules;
  const said = errors.slice(0, SHOWN).map((e) => (e.line ? `line ${e.line}: ${e.message}` : e.message));
  if (errors.length > SHOWN) said.push(`and ${errors.length - SHOWN} more`);
  throw new StageError(
    'deploy_redirects_invalid',
    `${REDIRECTS_FILE} has rules Hoist cannot follow: ${said.join('; ')}`,
    {
      ...FILE,
      lines: errors.map((e) => e.line),
    },
  );
}
