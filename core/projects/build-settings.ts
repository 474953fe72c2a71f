import type { BuildSettings } from '../entities/project.js';
import { invalid } from '../errors.js';
import { FRAMEWORKS } from '../ports/analyzer.js';

/** Runtimes a project can run on. */
export const RUNTIMES = ['static', 'node'] as const;

/** Frameworks a project may name: those Analyze detects (the Analyzer port's list). */
export { FRAMEWORKS };

/** Every build setting key, in display order. */
export const BUILD_SETTING_KEYS = [
  'root_directory',
  'install_command',
  'build_command',
  'start_command',
  'output_directory',
  'node_version',
  'framework',
  'runtime',
] as const satisfies readonly (keyof BuildSettings)[];

/** Longest accepted command, directory and Node version range. */
export const COMMAND_MAX = 1000;
export const DIRECTORY_MAX = 255;
export const NODE_VERSION_MAX = 64;

/** A change to build settings: a value sets the key, null clears it, an absent key is left alone. */
export type BuildSettingsPatch = { [K in keyof BuildSettings]?: string | null };

// A semver-ish range: comparators like 20, 20.x, ^18.17.0, >=18 <21, 18 || 20, 18 - 20.
const VERSION = String.raw`v?\d+(?:\.(?:\d+|x|X|\*)){0,2}`;
const COMPARATOR = String.raw`(?:\^|~|>=|<=|>|<|=)?\s*${VERSION}`;
const NODE_RANGE = new RegExp(String.raw`^\s*${COMPARATOR}(?:\s*(?:\|\||-|\s)\s*${COMPARATOR})*\s*$`);
const CONTROL = /[\u0000-\u001f\u007f]/;

function checkDirectory(key: string, v: string): void {
  if (v.length > DIRECTORY_MAX || CONTROL.test(v))
    throw invalid(`${key} must be at most ${DIRECTORY_MAX} printable characters`, { field: key });
  if (v.startsWith('/') || v.startsWith('\\') || /^[a-zA-Z]:/.test(v))
    throw invalid(`${key} must be a relative path`, { field: key });
  if (v.split(/[/\\]/).includes('..')) throw invalid(`${key} must not contain .. segments`, { field: key });
}

function checkOne(key: keyof BuildSettings, v: string): void {
  switch (key) {
    case 'root_directory':
    case 'output_directory':
      return checkDirectory(key, v);
    case 'install_command':
    case 'build_command':
    case 'start_command':
      if (v.trim() === '' || v.length > COMMAND_MAX || CONTROL.test(v))
        throw invalid(`${key} must be 1 to ${COMMAND_MAX} printable characters on one line (null clears it)`, {
          field: key,
        });
      return;
    case 'node_version':
      if (v.length > NODE_VERSION_MAX || !NODE_RANGE.test(v))
        throw invalid(`node_version must be a semver range such as 20, 20.x or >=18`, { field: key });
      return;
    case 'framework':
      if (!(FRAMEWORKS as readonly string[]).includes(v))
        throw invalid(`framework must be one of ${FRAMEWORKS.join(', ')} or null`, { field: key });
      return;
    case 'runtime':
      if (!(RUNTIMES as readonly string[]).includes(v))
        throw invalid(`runtime must be one of ${RUNTIMES.join(', ')} or null`, { field: key });
      return;
  }
}

/** Checks every key and value of `patch`; throws invalid_request naming the first bad field. */
export function validateBuildSettings(patch: Record<string, unknown>): BuildSettingsPatch {
  for (const [key, v] of Object.entries(patch)) {
    if (!(BUILD_SETTING_KEYS as readonly string[]).includes(key))
      throw invalid(`${key} is not a known build setting`, { field: key });
    if (v === null || v === undefined) continue;
    if (typeof v !== 'string') throw invalid(`${key} must be a string or null`, { field: key });
    checkOne(key as keyof BuildSettings, v);
  }
  return patch as BuildSettingsPatch;
}

/** `current` with `patch` applied: null clears a key, a string sets it, undefined leaves it. */
export function applyBuildSettings(current: BuildSettings, patch: BuildSettingsPatch): BuildSettings {
  const next: BuildSettings = { ...current };
  for (const [key, v] of Object.entries(patch) as [keyof BuildSettings, string | null | undefined][]) {
    if (v === null) delete next[key];
    else if (v !== undefined) next[key] = v;
  }
  return next;
}
