import type { UploadOptions } from '../entities/version.js';
import { invalid } from '../errors.js';

/** Upload options as an upload gives them: multipart text parts (all strings) or a JSON body. */
export interface UploadFields {
  root_directory?: string;
  skip_build?: string | boolean;
  clear_cache?: string | boolean;
  runtime?: string;
  framework?: string;
  visibility?: string;
  target?: string;
}

/** A true|false field (a boolean, or its text in a multipart part); undefined when absent. */
function flag(fields: UploadFields, field: 'skip_build' | 'clear_cache'): boolean | undefined {
  const v = fields[field];
  if (v === undefined || typeof v === 'boolean') return v;
  if (v !== 'true' && v !== 'false') throw invalid(`${field} must be true or false`, { field });
  return v === 'true';
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
  const skip = flag(fields, 'skip_build');
  if (skip !== undefined) o.skip_build = skip;
  if (flag(fields, 'clear_cache')) o.clear_cache = true;
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
