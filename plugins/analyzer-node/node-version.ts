import semver from 'semver';
import { StageError } from '../../core/errors.js';
import { FIELD_MAX } from './quoted.js';
import type { AnalyzerInput } from '../../core/ports/analyzer.js';
import type { PackageJson } from './package-json.js';

/** The Node version range a project asks for, and why. */
export interface NodeVersionChoice {
  version: string;
  reason: string;
  warnings: string[];
}

// nvm's LTS code names.
const CODENAMES: Record<string, number> = {
  argon: 4,
  boron: 6,
  carbon: 8,
  dubnium: 10,
  erbium: 12,
  fermium: 14,
  gallium: 16,
  hydrogen: 18,
  iron: 20,
  jod: 22,
  krypton: 24,
};
// nvm aliases for "the newest (LTS) release" or "whatever is installed": the host's Node is the one on offer.
const NEWEST = new Set(['node', 'stable', 'latest', 'current', 'lts/*', 'lts', 'system']);

/** The first version line of an .nvmrc or .node-version file, without comments. */
function versionLine(text: string): string | null {
  for (const line of text.split(/\r?\n/)) {
    const v = line.replace(/#.*/, '').trim();
    if (v) return v;
  }
  return null;
}

/**
 * Resolves the Node version: project setting node_version, else engines.node, else .nvmrc, else
 * .node-version, else the host's major. Throws analyze_node_version_unavailable when the host's
 * Node does not satisfy the request, analyze_invalid_node_version when it is not a range.
 */
export async function resolveNodeVersion(
  pkg: PackageJson,
  input: AnalyzerInput,
  host = process.version,
): Promise<NodeVersionChoice> {
  const hostVersion = semver.clean(host) ?? host;
  const major = String(semver.major(hostVersion));
  const candidates: [string, () => Promise<string | null>][] = [
    ['project setting node_version', async () => input.settings.node_version ?? null],
    ['engines.node', async () => pkg.enginesNode],
    [
      '.nvmrc',
      async () => (input.files.includes('.nvmrc') ? versionLine((await input.readFile('.nvmrc', 4096)) ?? '') : null),
    ],
    [
      '.node-version',
      async () =>
        input.files.includes('.node-version') ? versionLine((await input.readFile('.node-version', 4096)) ?? '') : null,
    ],
  ];
  for (const [source, read] of candidates) {
    const asked = (await read())?.trim();
    if (!asked) continue;
    const from = source === 'engines.node' ? 'engines.node in package.json' : source;
    // Before semver sees it: a megabyte of range takes it most of a second.
    if (asked.length > FIELD_MAX)
      throw new StageError(
        'analyze_invalid_node_version',
        `${from} is ${asked.length} characters long; Hoist reads a Node version of at most ${FIELD_MAX}. ` +
          'Give a version range such as 20, 20.x or >=18.',
        { source },
      );
    const fix =
      source === 'project setting node_version'
        ? `Change node_version in the project settings to a range that includes ${major}.`
        : `Change ${source} to a range that includes ${major}, or set node_version in the project settings.`;
    const alias = asked.toLowerCase();
    if (NEWEST.has(alias)) {
      return {
        version: major,
        reason: `${from} asks for "${asked}": the host's Node ${hostVersion} is used`,
        warnings: [`${from} asks for "${asked}"; this host provides Node ${hostVersion}, which is used`],
      };
    }
    let range = asked;
    if (alias.startsWith('lts/')) {
      const codename = CODENAMES[alias.slice(4)];
      if (!codename)
        throw new StageError(
          'analyze_invalid_node_version',
          `${from} asks for Node "${asked}", which is not a known Node LTS line. ${fix}`,
        );
      range = String(codename);
    }
    if (!semver.validRange(range)) {
      throw new StageError(
        'analyze_invalid_node_version',
        `${from} asks for Node "${asked}", which is not a version range such as 20, 20.x or >=18. ${fix}`,
      );
    }
    if (!semver.satisfies(hostVersion, range)) {
      const shown = range === asked ? asked : `${asked} (Node ${range})`;
      throw new StageError(
        'analyze_node_version_unavailable',
        `This project asks for Node ${shown} (from ${source}); this host runs Node ${hostVersion}. ${fix}`,
        { asked, source, host: hostVersion },
      );
    }
    return { version: range, reason: `${from} (${asked}), satisfied by the host's Node ${hostVersion}`, warnings: [] };
  }
  return {
    version: major,
    reason: `no engines.node, .nvmrc or .node-version: the host's Node ${major} is the default`,
    warnings: [],
  };
}
