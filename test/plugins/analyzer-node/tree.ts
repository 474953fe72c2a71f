import * as assert from 'uvu/assert';
import { StageError } from '../../../core/errors.js';
import type { AnalyzerInput, Detection } from '../../../core/ports/analyzer.js';
import { NodeAnalyzer } from '../../../plugins/analyzer-node/node-analyzer.js';

/** An in-memory source tree; objects are written as JSON. */
export type Files = Record<string, string | object>;

/** An AnalyzerInput over `files` with `settings`. */
export function tree(files: Files, settings: AnalyzerInput['settings'] = {}): AnalyzerInput {
  const text = (v: string | object) => (typeof v === 'string' ? v : JSON.stringify(v));
  return {
    files: Object.keys(files),
    settings,
    readFile: async (path, maxBytes = 1_000_000) =>
      path in files && text(files[path]).length <= maxBytes ? text(files[path]) : null,
  };
}

/** What the Node analyzer detects for `files`. */
export function detect(files: Files, settings: AnalyzerInput['settings'] = {}): Promise<Detection | null> {
  return new NodeAnalyzer().detect(tree(files, settings));
}

/** The StageError the Node analyzer throws for `files`; fails when it does not throw. */
export async function refused(files: Files, settings: AnalyzerInput['settings'] = {}): Promise<StageError> {
  try {
    await detect(files, settings);
  } catch (err) {
    assert.instance(err, StageError);
    return err as StageError;
  }
  throw new Error('the analyzer accepted the tree');
}

/** The host's Node major, as the analyzer reports it by default. */
export const HOST_MAJOR = process.versions.node.split('.')[0];
