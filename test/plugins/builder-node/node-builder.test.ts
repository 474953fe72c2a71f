import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../../config/load.js';
import type { HoistConfig } from '../../../config/schema.js';
import { StageError } from '../../../core/errors.js';
import type { Detection } from '../../../core/ports/analyzer.js';
import { NodeBuilder } from '../../../plugins/builder-node/node-builder.js';
import { defaultNpmRegistry } from '../../../plugins/builder-node/npm-registry.js';
import archiveZip from '../../../plugins/archive-zip/index.js';
import { testSandbox } from '../../helpers/sandbox.js';
import { HOME_DIR } from '../../../core/ports/sandbox.js';

const root = mkdtempSync(join(tmpdir(), 'hoist-builder-node-'));
test.after(() => rmSync(root, { recursive: true, force: true }));
const dataDir = join(root, 'data');
const sandbox = await testSandbox(root);
let n = 0;

/** A fresh workspace (`<dir>/src`, as the Build stage makes it) holding `files`. */
function project(files: Record<string, string>): string {
  const workspace = join(root, `build-${++n}`, 'src');
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(workspace, path)), { recursive: true });
    writeFileSync(join(workspace, path), content);
  }
  return workspace;
}

const pkg = (extra: object) => JSON.stringify({ name: 'fixture', version: '1.0.0', private: true, ...extra });

// What `npm install --package-lock-only` pins for these tiny packages (the last one is not in any registry).
const PINNED: Record<string, { version: string; integrity?: string; bin?: Record<string, string> }> = {
  'is-number': {
    version: '7.0.0',
    integrity: 'sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng==',
  },
  semver: {
    version: '7.6.3',
    integrity: 'sha512-oVekP1cKtI+CTDvHWYFUcMtsK/00wmAEfyqKfNdARm8u1wNVhSgaX7A8d4UuIlUI5e84iEwOhs7ZPYRmzU9U6A==',
    bin: { semver: 'bin/semver.js' },
  },
  mkdirp: {
    version: '1.0.4',
    integrity: 'sha512-vVqVZQyf3WLx2Shd0qJ9xuvqgAyKPLAiqITEtqW0oIUjzo3PePDd6fW9iFz30ef7Ysp/oiWqbhszeGWW2T6Gzw==',
    bin: { mkdirp: 'bin/cmd.js' },
  },
  '@hoist-test/definitely-missing-pkg-xyz': { version: '1.0.0' },
};

/** package.json and its package-lock.json for pinned dependencies and dev dependencies. */
function locked(deps: string[], devDeps: string[] = [], extra: object = {}): Record<string, string> {
  const ranges = (names: string[]) => Object.fromEntries(names.map((d) => [d, PINNED[d].version]));
  const manifest = { dependencies: ranges(deps), devDependencies: ranges(devDeps), ...extra };
  const packages = Object.fromEntries(
    [...deps, ...devDeps].map((d) => [
      `node_modules/${d}`,
      { ...PINNED[d], ...(devDeps.includes(d) ? { dev: true } : {}) },
    ]),
  );
  const lock = {
    name: 'fixture',
    version: '1.0.0',
    lockfileVersion: 3,
    requires: true,
    packages: { '': { name: 'fixture', version: '1.0.0', ...manifest }, ...packages },
  };
  return { 'package.json': pkg(manifest), 'package-lock.json': JSON.stringify(lock, null, 2) };
}

function detection(d: Partial<Detection>): Detection {
  return {
    runtime: 'static',
    framework: null,
    outputDir: 'dist',
    installCommand: 'npm ci',
    buildCommand: 'npm run build',
    startCommand: null,
    packageManager: 'npm',
    nodeVersion: null,
    reasons: {},
    warnings: [],
    ...d,
  };
}

/** Runs the builder; returns its output dir or the StageError it threw, and the build log. */
async function build(
  workspace: string,
  d: Detection,
  opts: { env?: Record<string, string>; signal?: AbortSignal; config?: Partial<HoistConfig>; cache?: string } = {},
): Promise<{ outputDir?: string; error?: StageError; log: string[] }> {
  const config = loadConfig({ HOIST_DATA_DIR: dataDir }, { buildTimeoutSeconds: 120, ...opts.config });
  const log: string[] = [];
  const builder = new NodeBuilder(config, sandbox);
  try {
    const { outputDir } = await builder.build({
      workspace,
      detection: d,
      env: opts.env ?? {},
      signal: opts.signal ?? new AbortController().signal,
      log: (l) => log.push(l),
      progress: () => {},
      ...(opts.cache && { cache: opts.cache }),
    });
    return { outputDir, log };
  } catch (err) {
    if (!(err instanceof StageError)) throw err;
    return { error: err, log };
  }
}

test(
  'a static site with package-lock.json: npm ci installs, the build script writes ' +
    'dist/, with the build environment',
  async () => {
    const buildJs = `
    const fs = require('fs');
    fs.mkdirSync('dist', { recursive: true });
    fs.writeFileSync('dist/index.html', '<p>' + require('is-number')(7) + '</p>');
    const e = process.env;
    fs.writeFileSync('dist/env.json', JSON.stringify({
      HOME: e.HOME, CI: e.CI, NODE_ENV: e.NODE_ENV, registry: e.npm_config_registry, cache: e.npm_config_cache,
      MY_VAR: e.MY_VAR, NODE_OPTIONS: e.NODE_OPTIONS,
    }));
  `;
    const workspace = project({
      ...locked(['is-number'], [], { scripts: { build: 'node build.js' } }),
      'build.js': buildJs,
    });
    const { outputDir, error, log } = await build(workspace, detection({}), { env: { MY_VAR: 'from project' } });
    assert.is(error, undefined, error?.message);
    assert.is(outputDir, join(workspace, 'dist'));
    assert.ok(log.includes('$ npm ci') && log.includes('$ npm run build'), log.join('\n'));
    assert.ok(existsSync(join(workspace, 'node_modules/is-number/package.json')));
    assert.is(readFileSync(join(outputDir!, 'index.html'), 'utf8'), '<p>true</p>');
    const env = JSON.parse(readFileSync(join(outputDir!, 'env.json'), 'utf8'));
    assert.is(env.HOME, HOME_DIR, "the sandbox's HOME (the build's own home folder)");
    assert.is.not(env.HOME, process.env.HOME);
    assert.is(env.CI, 'true');
    assert.is(env.NODE_ENV, 'production');
    assert.is(env.registry, await defaultNpmRegistry());
    assert.is(env.cache, `${HOME_DIR}/.npm`);
    assert.is(env.MY_VAR, 'from project');
    assert.match(env.NODE_OPTIONS, '--max-old-space-size=1536');
  },
);

test(
  'a committed node_modules without a lockfile is used as is, its symlinks become ' + 'working shims and copies',
  async () => {
    const workspace = project({
      'package.json': pkg({ scripts: { build: 'node build.js' } }),
      'build.js': `require('fs').writeFileSync('out.txt', require('local-dep').hello())`,
      'node_modules/local-dep/package.json': JSON.stringify({ name: 'local-dep', version: '1.0.0', main: 'index.js' }),
      'node_modules/local-dep/index.js': `exports.hello = () => 'hello from committed';`,
      'node_modules/local-dep/cli.js':
        `#!/usr/bin/env node\nconsole.log('cli ' + process.argv.slice(2).join(' ') + ' ' ` +
        `+ require('./index.js').hello());`,
      'node_modules/local-dep/data.txt': 'some data',
    });
    chmodSync(join(workspace, 'node_modules/local-dep/cli.js'), 0o755);
    mkdirSync(join(workspace, 'node_modules/.bin'));
    symlinkSync('../local-dep/cli.js', join(workspace, 'node_modules/.bin/local-cli'));
    symlinkSync('data.txt', join(workspace, 'node_modules/local-dep/data-link.txt'));
    symlinkSync('local-dep', join(workspace, 'node_modules/alias-dep'));
    symlinkSync('nowhere.js', join(workspace, 'node_modules/.bin/dangling'));
    const { outputDir, error, log } = await build(
      workspace,
      detection({ runtime: 'node', installCommand: null, buildCommand: 'node build.js' }),
    );
    assert.is(error, undefined, error?.message);
    assert.is(outputDir, workspace);
    assert.ok(log.includes('No install command: the committed node_modules is used as is.'), log.join('\n'));
    assert.not.ok(
      log.some((l) => l.startsWith('$ npm')),
      log.join('\n'),
    );
    assert.is(readFileSync(join(workspace, 'out.txt'), 'utf8'), 'hello from committed');
    const shim = join(workspace, 'node_modules/.bin/local-cli');
    assert.not.ok(lstatSync(shim).isSymbolicLink());
    assert.is(execFileSync(shim, ['a', 'b'], { encoding: 'utf8' }), 'cli a b hello from committed\n');
    assert.is(readFileSync(join(workspace, 'node_modules/local-dep/data-link.txt'), 'utf8'), 'some data');
    assert.ok(lstatSync(join(workspace, 'node_modules/alias-dep')).isDirectory());
    assert.is(readFileSync(join(workspace, 'node_modules/alias-dep/data.txt'), 'utf8'), 'some data');
    assert.not.ok(existsSync(join(workspace, 'node_modules/.bin/dangling')));
    await archiveZip.create({}).pack(workspace, join(dirname(workspace), 'artifact.zip'));
  },
);

test(
  'a service: dev dependencies serve the build and are pruned; the packed artifact ' + 'runs its .bin shims',
  async () => {
    const workspace = project({
      ...locked(['is-number', 'semver'], ['mkdirp'], {
        scripts: {
          build:
            `mkdirp built && node -e "require('fs').writeFileSync('built/ok.txt', ` +
            `String(require('is-number')(5)))"`,
          start: 'node server.js',
        },
      }),
      'server.js': '',
    });
    // NODE_ENV=production from the project must not make the install skip the dev dependencies the build needs.
    const { outputDir, error, log } = await build(
      workspace,
      detection({ runtime: 'node', outputDir: '.', startCommand: 'npm start' }),
      { env: { NODE_ENV: 'production' } },
    );
    assert.is(error, undefined, `${error?.message}\n${log.join('\n')}`);
    assert.is(outputDir, workspace);
    assert.ok(log.includes('$ npm prune --omit=dev'), log.join('\n'));
    assert.is(readFileSync(join(workspace, 'built/ok.txt'), 'utf8'), 'true');
    assert.not.ok(existsSync(join(workspace, 'node_modules/mkdirp')));
    assert.not.ok(existsSync(join(workspace, 'node_modules/.bin/mkdirp')));
    assert.ok(existsSync(join(workspace, 'node_modules/is-number/index.js')));
    assert.not.ok(lstatSync(join(workspace, 'node_modules/.bin/semver')).isSymbolicLink());
    assert.is(execFileSync(join(workspace, 'node_modules/.bin/semver'), ['1.2.3'], { encoding: 'utf8' }), '1.2.3\n');

    const archive = archiveZip.create({});
    const zip = join(dirname(workspace), 'artifact.zip');
    const unpacked = join(dirname(workspace), 'unpacked');
    await archive.pack(outputDir!, zip);
    await archive.extract(zip, await archive.inspect(zip, {}), unpacked);
    assert.is(
      execFileSync(join(unpacked, 'node_modules/.bin/semver'), ['--increment', '1.2.3'], { encoding: 'utf8' }),
      '1.2.4\n',
    );
  },
);

test('a dependency missing from the registry fails with build_dependency_unavailable naming it', async () => {
  const name = '@hoist-test/definitely-missing-pkg-xyz';
  const workspace = project(locked(['is-number', name]));
  const { error, log } = await build(workspace, detection({ buildCommand: null }));
  assert.is(error?.code, 'build_dependency_unavailable', `${error?.message}\n${log.join('\n')}`);
  assert.match(error!.message, `${name}@1.0.0`);
  assert.match(error!.message, await defaultNpmRegistry());
  assert.is(error!.details.package, `${name}@1.0.0`);
});

test('the install uses the configured npm registry only, whatever the project says', async () => {
  const workspace = project({ ...locked(['is-number']), '.npmrc': 'registry=https://registry.npmjs.org/\n' });
  const { error, log } = await build(workspace, detection({ buildCommand: null }), {
    config: { npmRegistry: 'http://127.0.0.1:9/', dataDir: join(root, `empty-cache-${n}`) },
    env: { npm_config_fetch_retries: '0', npm_config_registry: 'https://registry.npmjs.org/' },
  });
  assert.is(error?.code, 'build_install_failed', `${error?.message}\n${log.join('\n')}`);
  assert.match(error!.message, 'exit code');
  assert.ok(
    log.some((l) => l.includes('127.0.0.1:9')),
    log.join('\n'),
  );
});

test('a build script that exits 2 fails with build_failed', async () => {
  const workspace = project({ 'package.json': pkg({ scripts: { build: 'echo broken >&2; exit 2' } }) });
  const { error, log } = await build(workspace, detection({ installCommand: null }));
  assert.is(error?.code, 'build_failed', error?.message);
  assert.is(error!.details.exit_code, 2);
  assert.ok(log.includes('broken'), log.join('\n'));
});

test(
  'a static site whose build writes no output directory fails with ' + 'build_output_missing naming it and the command',
  async () => {
    const workspace = project({ 'package.json': pkg({ scripts: { build: 'echo nothing' } }) });
    const { error } = await build(workspace, detection({ installCommand: null, outputDir: 'out' }));
    assert.is(error?.code, 'build_output_missing');
    assert.match(error!.message, '"out"');
    assert.match(error!.message, '"npm run build"');
  },
);

test('cancel kills the running build and its children at once', async () => {
  // Pids inside the sandbox are of its own namespace: the processes are found on the host by a marker.
  const marker = `31.${process.pid}`;
  const workspace = project({
    'package.json': pkg({ scripts: { build: `sleep ${marker} & echo started > sh.pid; wait` } }),
  });
  const abort = new AbortController();
  const started = Date.now();
  const running = build(workspace, detection({ installCommand: null }), { signal: abort.signal });
  while (!existsSync(join(workspace, 'sh.pid'))) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 50));
  const alive = () => {
    try {
      return execFileSync('pgrep', ['-f', `^sleep ${marker}`])
        .toString()
        .trim();
    } catch {
      return '';
    }
  };
  assert.ok(alive(), "the build's child runs before the cancel");
  abort.abort();
  const { error } = await running;
  assert.is(error?.code, 'build_canceled', error?.message);
  assert.ok(Date.now() - started < 10_000);
  for (let i = 0; i < 100 && alive(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.is(alive(), '', 'no process of the build is left');
});

test('a build over the time limit fails with build_timeout', async () => {
  const workspace = project({ 'package.json': pkg({ scripts: { build: 'sleep 30' } }) });
  const started = Date.now();
  const { error } = await build(workspace, detection({ installCommand: null }), { config: { buildTimeoutSeconds: 1 } });
  assert.is(error?.code, 'build_timeout', error?.message);
  assert.match(error!.message, '1 s');
  assert.ok(Date.now() - started < 5000);
});

test(
  'a pnpm project on a host without pnpm fails with build_package_manager_missing ' + 'before running anything',
  async () => {
    try {
      execFileSync('sh', ['-c', 'command -v pnpm'], { stdio: 'ignore' });
      console.log('skip: pnpm is installed on this host');
      return;
    } catch {
      // absent, as expected here
    }
    const workspace = project({
      'package.json': pkg({ scripts: { build: 'echo hi' } }),
      'pnpm-lock.yaml': "lockfileVersion: '9.0'\n",
    });
    const d = detection({
      packageManager: 'pnpm',
      installCommand: 'pnpm install --frozen-lockfile',
      buildCommand: 'pnpm run build',
      reasons: { package_manager: 'from pnpm-lock.yaml' },
    });
    const { error, log } = await build(workspace, d);
    assert.is(error?.code, 'build_package_manager_missing', error?.message);
    assert.match(
      error!.message,
      'This project uses pnpm (from pnpm-lock.yaml) but pnpm is not installed on this ' +
        'host. Remove the lockfile to use npm, or set install_command',
    );
    assert.not.ok(log.some((l) => l.startsWith('$ ')));
  },
);

test(
  'a symlink in node_modules that points outside the project fails with ' + 'build_symlink_outside naming it',
  async () => {
    const workspace = project({ 'package.json': pkg({}), 'node_modules/dep/index.js': '' });
    writeFileSync(join(dirname(workspace), 'secret.txt'), 'outside');
    symlinkSync(join(dirname(workspace), 'secret.txt'), join(workspace, 'node_modules/dep/leak.txt'));
    const { error } = await build(workspace, detection({ runtime: 'node', installCommand: null, buildCommand: null }));
    assert.is(error?.code, 'build_symlink_outside', error?.message);
    assert.match(error!.message, 'node_modules/dep/leak.txt');
    assert.is(error!.details.path, 'node_modules/dep/leak.txt');
  },
);

test(
  'a folder link in node_modules to a project folder holding a link outside copies ' + 'nothing from outside',
  async () => {
    const workspace = project({ 'package.json': pkg({}), 'node_modules/dep/index.js': '', 'evil/readme.txt': '' });
    writeFileSync(join(dirname(workspace), 'secret.txt'), 'host-secret-content');
    symlinkSync(join(dirname(workspace), 'secret.txt'), join(workspace, 'evil/leak.txt'));
    symlinkSync('../evil', join(workspace, 'node_modules/aaa'));
    const { error } = await build(workspace, detection({ runtime: 'node', installCommand: null, buildCommand: null }));
    assert.is(error?.code, 'build_symlink_outside', error?.message);
    assert.is(error!.details.path, 'evil/leak.txt');
    assert.not.ok(
      existsSync(join(workspace, 'node_modules/aaa/leak.txt')) &&
        !lstatSync(join(workspace, 'node_modules/aaa')).isSymbolicLink(),
      'nothing was copied',
    );
  },
);

test('a Node.js app without dependencies installs and prunes nothing, and the log says so', async () => {
  const workspace = project({ 'package.json': pkg({ scripts: { start: 'node server.js' } }), 'server.js': '' });
  const { outputDir, log, error } = await build(
    workspace,
    detection({ runtime: 'node', installCommand: 'npm install --no-audit --no-fund', buildCommand: null }),
  );
  assert.is(error, undefined, log.join('\n'));
  assert.is(outputDir, workspace);
  assert.ok(
    log.includes(
      'No install: package.json declares no dependencies and no install scripts ' +
        '("npm install --no-audit --no-fund" skipped).',
    ),
    log.join('\n'),
  );
  assert.ok(log.includes('Nothing to prune: nothing was installed.'), log.join('\n'));
  assert.not.ok(
    log.some((l) => l.startsWith('$ npm')),
    log.join('\n'),
  );
});

test('without dependencies, an install script, an install_command setting or empty deps keep the install', async () => {
  const cases: [string, Record<string, string>, Partial<Detection>][] = [
    ['postinstall', { 'package.json': pkg({ scripts: { postinstall: 'echo ran > marker' } }) }, {}],
    ['prepare', { 'package.json': pkg({ scripts: { prepare: 'echo ran > marker' } }) }, {}],
    [
      'setting',
      { 'package.json': pkg({}) },
      { installCommand: 'echo ran > marker', reasons: { install_command: 'project setting install_command' } },
    ],
    ['a symlinked package.json', { 'real.json': pkg({}) }, {}],
  ];
  for (const [name, files, d] of cases) {
    const workspace = project({ ...files, 'server.js': '' });
    if (name === 'a symlinked package.json') symlinkSync('real.json', join(workspace, 'package.json'));
    const { log } = await build(
      workspace,
      detection({ runtime: 'node', installCommand: 'npm install --no-audit --no-fund', buildCommand: null, ...d }),
    );
    assert.not.ok(
      log.some((l) => l.startsWith('No install:')),
      `${name}: ${log.join('\n')}`,
    );
    assert.ok(
      log.some((l) => l.startsWith('$ ')),
      `${name}: ${log.join('\n')}`,
    );
  }
});

test('an app with dependencies but no devDependencies installs them, prunes nothing and says so', async () => {
  const workspace = project({
    ...locked(['is-number'], [], { scripts: { start: 'node server.js' } }),
    'server.js': '',
  });
  const { outputDir, log, error } = await build(
    workspace,
    detection({ runtime: 'node', buildCommand: null, startCommand: 'npm start' }),
  );
  assert.is(error, undefined, log.join('\n'));
  assert.is(outputDir, workspace);
  assert.ok(log.includes('$ npm ci'), log.join('\n'));
  assert.ok(
    log.includes('Nothing to prune: package.json declares no devDependencies ("npm prune --omit=dev" skipped).'),
    log.join('\n'),
  );
  assert.not.ok(
    log.some((l) => l.startsWith('$ npm prune')),
    log.join('\n'),
  );
  assert.ok(existsSync(join(workspace, 'node_modules/is-number/index.js')));
});

test('workspaces or an install_command setting keep the prune without devDependencies', async () => {
  const cases: [string, Record<string, string>, Partial<Detection>][] = [
    ['workspaces', { ...locked(['is-number'], [], { workspaces: [] }) }, {}],
    [
      'setting',
      locked(['is-number']),
      { installCommand: 'npm ci', reasons: { install_command: 'project setting install_command' } },
    ],
  ];
  for (const [name, files, d] of cases) {
    const workspace = project({ ...files, 'server.js': '' });
    const { log, error } = await build(workspace, detection({ runtime: 'node', buildCommand: null, ...d }));
    assert.is(error, undefined, `${name}: ${log.join('\n')}`);
    assert.ok(log.includes('$ npm prune --omit=dev'), `${name}: ${log.join('\n')}`);
  }
});

test("npm's downloads go to the build cache, and an npm ci with it fetches nothing again", async () => {
  const cache = join(root, `cache-${++n}`);
  mkdirSync(cache);
  const app = (): Record<string, string> => ({
    ...locked(['is-number', 'semver'], [], { scripts: { start: 'node server.js' } }),
    'server.js': '',
  });
  // npm says of each request whether its cache answered it.
  const env = { npm_config_loglevel: 'http' };
  const fetched = (log: string[]) => log.filter((l) => l.includes('http fetch GET'));
  const first = await build(project(app()), detection({ runtime: 'node', buildCommand: null }), { cache, env });
  assert.is(first.error, undefined, first.log.join('\n'));
  assert.ok(
    fetched(first.log).some((l) => l.includes('(cache miss)')),
    first.log.join('\n'),
  );
  assert.ok(existsSync(join(cache, 'npm/_cacache')), "the downloads are in the cache, not in the build's HOME");

  const again = project(app());
  const second = await build(again, detection({ runtime: 'node', buildCommand: null }), { cache, env });
  assert.is(second.error, undefined, second.log.join('\n'));
  assert.ok(existsSync(join(again, 'node_modules/semver/package.json')));
  assert.ok(fetched(second.log).length > 0, second.log.join('\n'));
  // Answered from the cache without asking the registry (without prefer-offline: "cache updated", each one asked).
  assert.ok(
    fetched(second.log).every((l) => /\(cache (hit|stale)\)/.test(l)),
    second.log.join('\n'),
  );
  assert.ok(existsSync(join(cache, 'npm/_cacache')), 'given back');
  assert.not.ok(existsSync(join(dirname(again), 'home/.npm')));
});

test.run();
