import { existsSync, statSync } from 'node:fs';
import { posix, resolve, sep } from 'node:path';
import { StageError } from '../../core/errors.js';
import type { Detection } from '../../core/ports/analyzer.js';
import type { BuildInput, Builder, BuildOutput } from '../../core/ports/builder.js';
import { CONFIG, definePlugin, PLUGIN_API_VERSION, type HoistConfig } from '../../core/plugin.js';
import { SANDBOX, type Sandbox } from '../../core/ports/sandbox.js';
import { buildCommand, checkRealDirectory, nodeHeapCap, runTenant } from '../shared/sandbox/run-tenant.js';

/** Static sites: no build for plain HTML; otherwise the install and build commands, then the output dir. */
export class StaticBuilder implements Builder {
  readonly id = 'builder-static';

  constructor(
    private readonly config: HoistConfig,
    private readonly sandbox: Sandbox,
  ) {}

  supports(detection: Detection): boolean {
    return detection.runtime === 'static';
  }

  async build({ workspace, detection, env, signal, tenant, log, progress }: BuildInput): Promise<BuildOutput> {
    const commands = [detection.installCommand, detection.buildCommand].filter((c): c is string => !!c);
    const deadline = Date.now() + this.config.buildTimeoutSeconds * 1000;
    for (const [i, command] of commands.entries()) {
      log(`$ ${command}`);
      await runTenant(this.sandbox, command, {
        workspace,
        env: { CI: 'true', ...env, NODE_OPTIONS: nodeHeapCap(env, this.config.buildMemoryMb) },
        network: 'egress',
        signal,
        tenant,
        log,
        ...buildCommand(this.config, deadline),
      });
      progress((i + 1) / (commands.length + 1));
    }
    if (commands.length === 0) log('Plain static site: nothing to build.');
    const outputDir = resolve(workspace, detection.outputDir);
    if (outputDir !== workspace && !outputDir.startsWith(workspace + sep)) throw outputInvalid(detection);
    await checkRealDirectory(workspace, outputDir, detection.outputDir);
    if (!existsSync(outputDir) || !statSync(outputDir).isDirectory()) throw outputMissing(detection);
    if (!existsSync(resolve(outputDir, 'index.html'))) throw noIndexHtml(detection);
    return { outputDir };
  }

  outputWithoutBuild({
    detection,
    files,
    log,
  }: {
    detection: Detection;
    files: string[];
    log(line: string): void;
  }): string | null {
    if (detection.installCommand || detection.buildCommand) return null;
    log('Plain static site: nothing to build.');
    const dir = posix.normalize(detection.outputDir).replace(/(.)\/$/, '$1');
    if (dir === '..' || dir.startsWith('../') || dir.startsWith('/')) throw outputInvalid(detection);
    const prefix = dir === '.' ? '' : `${dir}/`;
    if (!files.some((f) => f.startsWith(prefix))) throw outputMissing(detection);
    if (!files.includes(`${prefix}index.html`)) throw noIndexHtml(detection);
    return dir;
  }
}

const outputInvalid = (d: Detection) =>
  new StageError('build_output_invalid', `output_directory "${d.outputDir}" leaves the project`);
const outputMissing = (d: Detection) =>
  new StageError(
    'build_output_missing',
    `The build did not produce the output directory "${d.outputDir}". Check build_command and output_directory.`,
  );
const noIndexHtml = (d: Detection) =>
  new StageError('build_output_no_index_html', `The output directory "${d.outputDir}" has no index.html.`);

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'builder-static',
  port: 'builder',
  name: 'static',
  deps: { config: CONFIG, sandbox: SANDBOX },
  create: ({ config, sandbox }) => new StaticBuilder(config, sandbox),
});
