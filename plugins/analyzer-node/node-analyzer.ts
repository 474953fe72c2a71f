import { StageError } from '../../core/errors.js';
import { quoted } from './quoted.js';
import type { Analyzer, AnalyzerInput, Detection } from '../../core/ports/analyzer.js';
import { detectFramework } from './frameworks.js';
import { chooseInstallCommand } from './install-command.js';
import { resolveNodeVersion } from './node-version.js';
import { parsePackageJson } from './package-json.js';
import { detectPackageManager, execBin, runScript } from './package-manager.js';
import { findStartCommand } from './start-command.js';

/**
 * Node.js projects: package.json at the root. A framework that builds static files (or a plain
 * package with only a build script) is deployed as a static site; anything with a server runs as
 * a Node.js service. Every project setting overrides the value it names.
 */
export class NodeAnalyzer implements Analyzer {
  readonly id = 'analyzer-node';
  readonly priority = 10;

  /**
   * Detects a Node.js project; null when there is no package.json (or it only holds tooling for a plain static site).
   */
  async detect(input: AnalyzerInput): Promise<Detection | null> {
    const { files, settings } = input;
    if (!files.includes('package.json')) {
      if (settings.runtime !== 'node') return null;
      throw new StageError(
        'analyze_no_package_json',
        'The project runtime is node but there is no package.json at the root of the ' +
          'archive. Put package.json at the top level (or inside one top-level folder), set ' +
          'root_directory to the folder that holds it, or change the runtime setting.',
      );
    }
    const pkg = parsePackageJson(await input.readFile('package.json'));
    const pm = detectPackageManager(pkg, files);
    const framework = await detectFramework({ pkg, input, exec: (c) => execBin(pm, c) });
    const found = findStartCommand(pkg, files, pm, framework);
    const warnings = [...pm.warnings];
    const reasons: Record<string, string> = { package_manager: pm.reason };

    let runtime: 'static' | 'node';
    if (settings.runtime === 'static' || settings.runtime === 'node') {
      runtime = settings.runtime;
      reasons.runtime = 'project setting runtime';
      if (framework && framework.runtime !== runtime) {
        const consequence =
          framework.runtime === 'node'
            ? 'runs as a server here, so its build may not write static files'
            : 'builds static files, so the start command must serve them';
        warnings.push(`runtime ${runtime} is set but ${framework.name} ${consequence}`);
      }
    } else if (framework) {
      runtime = framework.runtime;
      reasons.runtime = framework.reason;
    } else if (found || settings.start_command) {
      runtime = 'node';
      reasons.runtime = `it has a way to start: ${found?.reason ?? 'project setting start_command'}`;
    } else if (pkg.scripts.build) {
      runtime = 'static';
      reasons.runtime =
        'a build script and no start script, main or server file: the build output is served as a static site';
    } else if (files.includes('index.html')) {
      return null; // package.json only holds tooling; analyzer-static serves the files as they are
    } else {
      runtime = 'node';
      reasons.runtime = 'package.json at the root';
    }

    let buildCommand: string | null = null;
    if (settings.skip_build) reasons.build_command = 'upload option skip_build';
    else if (settings.build_command)
      [buildCommand, reasons.build_command] = [settings.build_command, 'project setting build_command'];
    else if (pkg.scripts.build)
      [buildCommand, reasons.build_command] = [
        runScript(pm, 'build'),
        `scripts.build in package.json ("${quoted(pkg.scripts.build)}")`,
      ];
    else if (framework?.build)
      [buildCommand, reasons.build_command] = [
        framework.build,
        `the ${framework.name} build (no build script in package.json)`,
      ];
    else reasons.build_command = 'no build script in package.json';
    // A static site with nothing to build: analyzer-static serves (or refuses) the files as they are.
    if (runtime === 'static' && !buildCommand && !settings.skip_build) return null;

    let startCommand: string | null = null;
    if (runtime === 'static') reasons.start_command = 'a static site needs no server';
    else if (settings.start_command)
      [startCommand, reasons.start_command] = [settings.start_command, 'project setting start_command'];
    else if (found) [startCommand, reasons.start_command] = [found.command, found.reason];
    else {
      throw new StageError(
        'analyze_no_start_command',
        'No way to start this app: add a "start" script to package.json (e.g. "start": ' +
          '"node server.js"), a "main" field, or a server.js / index.js file, or set ' +
          'start_command in the project settings.',
      );
    }

    const node = await resolveNodeVersion(pkg, input);
    warnings.push(...node.warnings);
    reasons.node_version = node.reason;

    let installCommand: string | null = null;
    if (runtime === 'static' && !buildCommand) reasons.install_command = 'nothing is built, so nothing is installed';
    else
      ({ command: installCommand, reason: reasons.install_command } = chooseInstallCommand(
        pm,
        files,
        settings.install_command,
      ));

    let outputDir: string;
    if (settings.output_directory)
      [outputDir, reasons.output_dir] = [settings.output_directory, 'project setting output_directory'];
    else if (runtime === 'node')
      [outputDir, reasons.output_dir] = ['.', 'a Node.js service runs from the project root'];
    else if (framework?.outputDir)
      [outputDir, reasons.output_dir] = [framework.outputDir, `where ${framework.name} writes its build`];
    else
      [outputDir, reasons.output_dir] = [
        'dist',
        'the most common build output; set output_directory if the build writes elsewhere',
      ];

    reasons.framework = settings.framework
      ? 'project setting framework'
      : (framework?.reason ?? 'no known framework among the dependencies');
    return {
      runtime,
      framework: settings.framework ?? framework?.name ?? null,
      outputDir,
      installCommand,
      buildCommand,
      startCommand,
      packageManager: pm.name,
      nodeVersion: node.version,
      reasons,
      warnings,
    };
  }
}
