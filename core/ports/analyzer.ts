import type { BuildSettings } from '../entities/project.js';
import { token } from '../tokens.js';

/** The framework names an analyzer may detect (`Detection.framework`); a project may name the same ones. */
export const FRAMEWORKS = [
  'static',
  'vite',
  'react',
  'create-react-app',
  'vue',
  'svelte',
  'angular',
  'astro',
  'nextjs',
  'nuxt',
  'remix',
  'sveltekit',
  'gatsby',
  'docusaurus',
  'eleventy',
  'express',
  'fastify',
  'koa',
  'hono',
  'nestjs',
  'node',
] as const;

/** What an analyzer sees: the unpacked, unwrapped source tree (root_directory applied). */
export interface AnalyzerInput {
  /** Relative paths of every file, `/`-separated. */
  files: string[];
  /** Reads a small file of the tree (at most `maxBytes`, default 1 MB); null when absent. */
  readFile(path: string, maxBytes?: number): Promise<string | null>;
  /** Project settings merged with the upload's options; each overrides a detected value. */
  settings: BuildSettings & { skip_build?: boolean };
}

/** What an analyzer found; every chosen value says why in `reasons`. */
export interface Detection {
  runtime: 'static' | 'node';
  framework: string | null;
  /** Directory (relative to the source root) that holds the files to serve after the build. */
  outputDir: string;
  installCommand: string | null;
  buildCommand: string | null;
  startCommand: string | null;
  packageManager: string | null;
  nodeVersion: string | null;
  /** Why each value was chosen, by field name ("index.html at the root", "project setting"). */
  reasons: Record<string, string>;
  warnings: string[];
}

/**
 * Detects the runtime of a source tree. Multi-bound: every registered analyzer is asked in
 * `priority` order (highest first) and the first non-null answer wins.
 */
export interface Analyzer {
  /** The plugin id, shown in the Analyze result. */
  readonly id: string;
  /** Higher runs first; a more specific analyzer (node) outranks the fallback (static). */
  readonly priority: number;
  /**
   * Returns a Detection when the tree is for this analyzer, null when it is not, and throws a
   * StageError with an `analyze_*` code when it is but cannot be
   * deployed (the message says what to add or change).
   */
  detect(input: AnalyzerInput): Promise<Detection | null>;
}

export const ANALYZERS = token<Analyzer[]>('hoist.Analyzers');
