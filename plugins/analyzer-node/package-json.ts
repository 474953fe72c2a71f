import { StageError } from '../../core/errors.js';
import { FIELD_MAX } from './quoted.js';

/** The parts of a package.json the Node analyzer reads, with their types checked. */
export interface PackageJson {
  scripts: Record<string, string>;
  /** Names from dependencies and devDependencies. */
  deps: Set<string>;
  enginesNode: string | null;
  main: string | null;
  packageManager: string | null;
}

const invalid = (problem: string) =>
  new StageError(
    'analyze_invalid_package_json',
    `package.json at the root is invalid: ${problem}. Fix it and upload again.`,
  );

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function objectField(pkg: Record<string, unknown>, key: string): Record<string, unknown> {
  const v = pkg[key];
  if (v === undefined) return {};
  if (!isObject(v)) throw invalid(`"${key}" must be an object`);
  return v;
}

function stringField(obj: Record<string, unknown>, key: string, label = key, max = Infinity): string | null {
  const v = obj[key];
  if (v === undefined) return null;
  if (typeof v !== 'string') throw invalid(`"${label}" must be a string`);
  if (v.length > max) throw invalid(`"${label}" is ${v.length} characters long; Hoist reads at most ${max}`);
  return v;
}

/**
 * Parses the text of package.json; throws analyze_invalid_package_json naming the problem (engines.node and
 * packageManager longer than FIELD_MAX among them).
 */
export function parsePackageJson(text: string | null): PackageJson {
  if (text === null) throw invalid('it could not be read (it must be a file of at most 1 MB)');
  let pkg: unknown;
  try {
    pkg = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (err) {
    throw invalid(`it is not valid JSON (${(err as Error).message})`);
  }
  if (!isObject(pkg))
    throw invalid(
      `it must hold a JSON object, not ${Array.isArray(pkg) ? 'an array' : pkg === null ? 'null' : `a ${typeof pkg}`}`,
    );
  const scripts: Record<string, string> = {};
  for (const [name, cmd] of Object.entries(objectField(pkg, 'scripts'))) {
    if (typeof cmd !== 'string') throw invalid(`"scripts.${name}" must be a string`);
    scripts[name] = cmd;
  }
  const deps = new Set([
    ...Object.keys(objectField(pkg, 'dependencies')),
    ...Object.keys(objectField(pkg, 'devDependencies')),
  ]);
  return {
    scripts,
    deps,
    enginesNode: stringField(objectField(pkg, 'engines'), 'node', 'engines.node', FIELD_MAX),
    main: stringField(pkg, 'main'),
    packageManager: stringField(pkg, 'packageManager', 'packageManager', FIELD_MAX),
  };
}
