import type { Detection } from './analyzer.js';
import { token } from '../tokens.js';

/** What a builder gets: a fresh workspace holding the source tree, and how to report. */
export interface BuildInput {
  /** Absolute path of the workspace (the source root); the builder may write in it. */
  workspace: string;
  detection: Detection;
  /** Environment variables for the build (build-scoped project variables). */
  env: Record<string, string>;
  /** Aborted on cancel or time-out: the builder stops its processes and rejects. */
  signal: AbortSignal;
  /** The account whose build this is: the tenant of its sandboxed commands (SandboxRun.tenant). */
  tenant?: string;
  /** Appends one line to the build log. */
  log(line: string): void;
  /** Reports progress within the stage (0–1). */
  progress(fraction: number): void;
  /**
   * The operation's redaction (server paths, the build's secret values and their encodings masked), for tenant output
   * a stage error quotes: applied before any cut, so no secret is cut in two and partly shown. Absent: text goes as
   * it is (the stage redacts the whole message).
   */
  redact?(text: string): string;
  /**
   * A folder the builder may keep things in for the account's next builds (a package manager's download cache):
   * what an earlier build left there, or empty. Tenant code may write it; it goes back only as folders and regular
   * files within the configured size (HOIST_BUILD_CACHE_MB), and may be dropped at any time. Absent when off.
   */
  cache?: string;
}

/** The result of a build: the directory to pack as the immutable artifact. */
export interface BuildOutput {
  /** Absolute path of the directory whose contents become the artifact. */
  outputDir: string;
}

/** Builds a detected source tree. Multi-bound: the first builder that supports the detection runs. */
export interface Builder {
  readonly id: string;
  /** True when this builder handles the detection (by runtime, framework...). */
  supports(detection: Detection): boolean;
  /** Runs the build; throws a StageError with a `build_*` code and a clear message on failure. */
  build(input: BuildInput): Promise<BuildOutput>;
  /**
   * Optional. When the detection needs nothing run, the output directory (relative to the source
   * root, normalized; `.` for the root) after the checks `build` would make, judged on the tree's
   * file list: the stage then ships the upload itself as the artifact, that folder its root, unpacking nothing.
   * Null when there is something to run: the stage then unpacks and calls `build`.
   */
  outputWithoutBuild?(input: { detection: Detection; files: string[]; log(line: string): void }): string | null;
}

export const BUILDERS = token<Builder[]>('hoist.Builders');
