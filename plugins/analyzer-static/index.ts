import { StageError } from '../../core/errors.js';
import { definePlugin, PLUGIN_API_VERSION } from '../../core/plugin.js';
import type { Analyzer, AnalyzerInput, Detection } from '../../core/ports/analyzer.js';

/** Static sites: HTML at the root, or a build command (from the project settings) that writes one. */
export class StaticAnalyzer implements Analyzer {
  readonly id = 'analyzer-static';
  readonly priority = 0;

  async detect({ files, settings }: AnalyzerInput): Promise<Detection | null> {
    if (settings.runtime && settings.runtime !== 'static') return null;
    const reasons: Record<string, string> = {};
    const buildCommand = settings.skip_build ? null : (settings.build_command ?? null);
    const outputDir = settings.output_directory ?? '.';
    reasons.runtime = settings.runtime ? 'project setting runtime=static' : 'no other analyzer claimed the archive';
    reasons.output_dir = settings.output_directory
      ? 'project setting output_directory'
      : 'the archive root is served as is';
    if (buildCommand) reasons.build_command = 'project setting build_command';
    else if (!files.includes('index.html')) {
      throw new StageError(
        'analyze_no_index_html',
        'No index.html at the root of the archive. Put index.html at the top level (or inside one top-level ' +
          'folder), set root_directory to the folder that holds it, or set a build_command that writes it.',
      );
    }
    return {
      runtime: 'static',
      framework: settings.framework ?? null,
      outputDir,
      installCommand: buildCommand ? (settings.install_command ?? null) : null,
      buildCommand,
      startCommand: null,
      packageManager: null,
      nodeVersion: null,
      reasons,
      warnings: [],
    };
  }
}

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'analyzer-static',
  port: 'analyzer',
  name: 'static',
  deps: {},
  create: () => new StaticAnalyzer(),
});
