import type { UploadOptions } from '../entities/version.js';
import { invalid } from '../errors.js';

/** Upload options as an upload gives them: multipart text parts (all strings) or a JSON body. */
export interface UploadFields {
  root_directory?: string;
  skip_build?: string | boolean;
  runtime?: string;
  framework?: string;
  visibility?: string;
  target?: string;
}

/** Validates the upload options among an upload's fields (and its visibility, which is not an option). */
export function uploadOptions(fields: UploadFields): UploadOptions {
  const o: UploadOptions = {};
  if (fields.root_directory !== undefined) {
    const r = fields.root_directory.trim();
    if (r.startsWith('/') || r.includes('\\') || r.split('/').includes('..') || r.length > 255) {
      throw invalid('root_directory must be a relative folder inside the archive, without ..', {
        field: 'root_directory',
      });
    }
    o.root_directory = r;
  }
  if (typeof fields.skip_build === 'boolean') o.skip_build = fields.skip_build;
  else if (fields.skip_build !== undefined) {
    if (!['true', 'false'].includes(fields.skip_build))
      throw invalid('skip_build must be true or false', { field: 'skip_build' });
    o.skip_build = fields.skip_build === 'true';
  }
  if (fields.runtime !== undefined) {
    if (!['static', 'node'].includes(fields.runtime))
      throw invalid('runtime must be static or node', { field: 'runtime' });
    o.runtime = fields.runtime;
  }
  if (fields.framework !== undefined) {
    if (!/^[a-z0-9-]{1,40}$/.test(fields.framework))
      throw invalid('framework must be a lower-case name such as vite or astro', { field: 'framework' });
    o.framework = fields.framework;
  }
  if (fields.target !== undefined) {
    if (!['production', 'preview'].includes(fields.target))
      throw invalid('target must be production or preview', { field: 'target' });
    if (fields.target === 'preview') o.target = 'preview';
  }
  if (fields.visibility !== undefined && !['draft', 'public', 'private'].includes(fields.visibility)) {
    throw invalid('visibility must be draft, public or private', { field: 'visibility' });
  }
  return o;
}
