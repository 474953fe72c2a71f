import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdir, rename } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import type { HoistConfig } from '../../core/plugin.js';
import { StageError } from '../../core/errors.js';
import type { Detection } from '../../core/ports/analyzer.js';
import type { BuildInput, Builder, BuildOutput } from '../../core/ports/builder.js';
import { HOME_DIR, type Sandbox } from '../../core/ports/sandbox.js';
import { buildCommand, checkRealDirectory, nodeHeapCap, runTenant } from '../shared/sandbox/run-tenant.js';
import { missingPackage } from './missing-package.js';
import { defaultNpmRegistry } from './npm-registry.js';
import { nothingToInstall, nothingToPrune } from './nothing-to-install.js';
import { quoteLine } from './quote-line.js';
import { replaceSymlinks } from './replace-symlinks.js';

/** Entries the copies that replace node_modules' links may add: an artifact holds at most 20,000 files. */
const COPIED_ENTRIES_MAX = 20_000;

// Host variables a build needs to reach the registry (its proxy and CA bundle, which the sandbox's
// read-only /etc/ssl holds); nothing else of the host leaks in.
const HOST_VARS = [
  'NODE_EXTRA_CA_CERTS',
  'HTTPS_PROXY',
  'https_proxy',
  'HTTP_PROXY',
  'http_proxy',
  'NO_PROXY',
  'no_proxy',
];
// Managers that may be absent here; corepack would download them, which the registry-only network forbids.
const OPTIONAL_MANAGERS = ['pnpm', 'yarn', 'bun'];

/**
 * Node.js projects (a detection with a package manager): installs dependencies (with dev
 * dependencies), runs the build script, then for a static site returns its output directory and for
 * a service prunes dev dependencies and returns the whole workspace, with node_modules symlinks
 * replaced by shims so it can be packed. Every step runs as a child process with the build's
 * shared time limit and memory cap; the registry is the configured one only.
 */
export class NodeBuilder implements Builder {
  readonly id = 'builder-node';

  constructor(
    private readonly config: HoistConfig,
    private readonly sandbox: Sandbox,
  ) {}

  supports(detection: Detection): boolean {
    return detection.packageManager !== null;
  }

  async build(input: BuildInput): Promise<BuildOutput> {
    // HOME lasts for the install and build commands of this build only. npm's download cache in it (~/.npm) comes
    // from the account's build cache when there is one, and goes back there at the end.
    const home = join(dirname(input.workspace), 'home');
    await mkdir(home, { recursive: true });
    const npmCache = input.cache && join(input.cache, 'npm');
    if (npmCache) await rename(npmCache, join(home, '.npm')).catch(() => {});
    try {
      return await this.buildWith(input, home, npmCache !== undefined);
    } finally {
      if (npmCache) await rename(join(home, '.npm'), npmCache).catch(() => {});
    }
  }

  private async buildWith(
    { workspace, detection: d, env, signal, tenant, log, progress, redact }: BuildInput,
    home: string,
    cached: boolean,
  ): Promise<BuildOutput> {
    // Read lazily (once per process) so that booting Hoist, e.g. for a CLI command, spawns no npm.
    const registry = this.config.npmRegistry ?? (await defaultNpmRegistry());
    const base: Record<string, string> = {
      PATH: '/usr/local/bin:/usr/bin:/bin',
      ...Object.fromEntries(HOST_VARS.flatMap((k) => (process.env[k] ? [[k, process.env[k]!]] : []))),
      HOME: HOME_DIR,
      CI: 'true',
      npm_config_cache: `${HOME_DIR}/.npm`,
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
      npm_config_audit: 'false',
      // With a lockfile (npm ci), what the cache holds is what the lockfile pins, checked against its integrity:
      // npm need not ask the registry again. (npm install resolves ranges: it asks.)
      ...(cached && /^npm ci(\s|$)/.test(d.installCommand ?? '') && { npm_config_prefer_offline: 'true' }),
      ...env,
      // After the project's variables: they cannot point installs elsewhere (lockfile URLs included).
      npm_config_registry: registry,
      npm_config_replace_registry_host: 'always',
    };
    await checkPackageManager(d);

    const deadline = Date.now() + this.config.buildTimeoutSeconds * 1000;
    const run = async (command: string, childEnv: Record<string, string>, lines: string[] = []) => {
      log(`$ ${command}`);
      const capture = (line: string) => {
        if (lines.push(line) > 1000) lines.shift();
        log(line);
      };
      await runTenant(this.sandbox, command, {
        workspace,
        home,
        env: { ...childEnv, NODE_OPTIONS: nodeHeapCap(childEnv, this.config.buildMemoryMb) },
        network: 'egress',
        signal,
        tenant,
        log: capture,
        ...buildCommand(this.config, deadline),
      }).catch((err) => {
        if (!(err instanceof StageError) || err.code !== 'build_timeout') throw err;
        throw new StageError(
          'build_timeout',
          `"${command}" was stopped: the build exceeded its time limit of ` +
            `${this.config.buildTimeoutSeconds} s (HOIST_BUILD_TIMEOUT_SECONDS).`,
          {},
          { cause: err },
        );
      });
    };
    const steps = d.runtime === 'node' ? 3 : 2;

    // The analyzer's own install command (not a project setting) is skipped when it would fetch nothing.
    const ownInstall = d.installCommand !== null && d.reasons.install_command !== 'project setting install_command';
    const skipInstall = ownInstall && (await nothingToInstall(workspace));
    // Judged on package.json as uploaded, before any of the project's scripts ran.
    const skipPrune = ownInstall && /^npm\s/.test(d.installCommand!) && (await nothingToPrune(workspace));
    if (skipInstall)
      log(`No install: package.json declares no dependencies and no install scripts ("${d.installCommand}" skipped).`);
    else if (d.installCommand) {
      const lines: string[] = [];
      // Without NODE_ENV=production: the build usually needs the dev dependencies (pruned afterwards).
      const { NODE_ENV: _, ...installEnv } = base;
      await run(d.installCommand, installEnv, lines).catch((err) =>
        Promise.reject(installError(err, lines, d.installCommand!, registry, redact)),
      );
    } else log('No install command: the committed node_modules is used as is.');
    progress(1 / steps);
    if (d.buildCommand) await run(d.buildCommand, { ...base, NODE_ENV: env.NODE_ENV ?? 'production' });
    progress(2 / steps);
    if (d.runtime === 'static') return { outputDir: await staticOutput(workspace, d) };

    const prune = /^npm\s/.test(d.installCommand ?? '')
      ? 'npm prune --omit=dev'
      : /^pnpm\s/.test(d.installCommand ?? '')
        ? 'pnpm prune --prod'
        : null;
    if (skipInstall) log('Nothing to prune: nothing was installed.');
    else if (prune && skipPrune)
      log(`Nothing to prune: package.json declares no devDependencies ("${prune}" skipped).`);
    else if (prune) await run(prune, base);
    else
      log(
        d.installCommand
          ? `Dev dependencies are kept: Hoist prunes them only after an npm or pnpm install.`
          : 'The committed node_modules is not pruned.',
      );
    if (existsSync(join(workspace, 'node_modules'))) {
      const replaced = await replaceSymlinks(workspace, join(workspace, 'node_modules'), {
        bytes: this.config.buildDiskMb * 1024 * 1024,
        entries: COPIED_ENTRIES_MAX,
      });
      if (replaced)
        log(
          `Replaced ${replaced} symbolic links under node_modules with shims or copies (an artifact holds only files).`,
        );
    }
    progress(1);
    return { outputDir: workspace };
  }
}

/** Fails fast, with what to change, when the detected package manager is not installed here. */
async function checkPackageManager(d: Detection): Promise<void> {
  const pm = d.packageManager ?? 'npm';
  if (!OPTIONAL_MANAGERS.includes(pm)) return;
  const uses = (command: string | null) => !!command && new RegExp(`(^|[\\s;&|(])${pm}(\\s|$)`).test(command);
  if (!uses(d.installCommand) && !uses(d.buildCommand)) return;
  // On the host: Hoist's PATH alone, never the project's variables (LD_PRELOAD would run its code here).
  const found = await promisify(execFile)('sh', ['-c', `command -v ${pm}`], {
    env: { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin' },
  }).then(
    () => true,
    () => false,
  );
  if (found) return;
  const why = d.reasons.package_manager ?? 'as detected';
  throw new StageError(
    'build_package_manager_missing',
    `This project uses ${pm} (${why}) but ${pm} is not installed on this host. Remove ` +
      `the lockfile to use npm, or set ` +
      `install_command${uses(d.buildCommand) ? ' and build_command' : ''}.`,
    { package_manager: pm },
  );
}

/**
 * An install failure as a clear stage error: the missing package when the registry lacks one, else the first error
 * line of its output, quoted redacted with `redact` and cut (quoteLine).
 */
function installError(
  err: unknown,
  lines: string[],
  command: string,
  registry: string,
  redact?: (text: string) => string,
): unknown {
  if (!(err instanceof StageError) || err.code !== 'build_failed') return err;
  const named = missingPackage(lines);
  if (named) {
    const pkg = quoteLine(named, redact);
    return new StageError(
      'build_dependency_unavailable',
      `The package ${pkg} is not available from the npm registry ${registry}, so ` +
        `"${command}" failed. Depend on a version the registry has, or remove the ` +
        `dependency.`,
      { package: pkg, registry },
      { cause: err },
    );
  }
  const first = lines.map((l) => l.trim()).find((l) => /^(?:npm error (?!code )|ERR_PNPM_|error )\S/.test(l));
  return new StageError(
    'build_install_failed',
    `Installing dependencies ("${command}") failed with exit code ${err.details.exit_code ?? err.details.signal}` +
      (first ? `: ${quoteLine(first, redact)}` : ''),
    err.details,
    { cause: err },
  );
}

/** The static site's output directory, checked like builder-static does. */
async function staticOutput(workspace: string, d: Detection): Promise<string> {
  const outputDir = resolve(workspace, d.outputDir);
  if (outputDir !== workspace && !outputDir.startsWith(workspace + sep)) {
    throw new StageError('build_output_invalid', `output_directory "${d.outputDir}" leaves the project`);
  }
  await checkRealDirectory(workspace, outputDir, d.outputDir);
  if (!existsSync(outputDir) || !statSync(outputDir).isDirectory()) {
    const by = d.buildCommand ? `"${d.buildCommand}"` : 'The project (no build command)';
    throw new StageError(
      'build_output_missing',
      `${by} did not produce the output directory "${d.outputDir}". Check build_command and output_directory.`,
      { output_directory: d.outputDir },
    );
  }
  if (!existsSync(join(outputDir, 'index.html'))) {
    throw new StageError('build_output_no_index_html', `The output directory "${d.outputDir}" has no index.html.`);
  }
  return outputDir;
}
