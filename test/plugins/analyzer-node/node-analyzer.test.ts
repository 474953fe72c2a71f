import { test } from 'uvu';
import * as assert from 'uvu/assert';
import plugin from '../../../plugins/analyzer-node/index.js';
import { StaticAnalyzer } from '../../../plugins/analyzer-static/index.js';
import { detect, HOST_MAJOR, refused } from './tree.js';

const REASON_KEYS = [
  'build_command',
  'framework',
  'install_command',
  'node_version',
  'output_dir',
  'package_manager',
  'runtime',
  'start_command',
];

test('the plugin is an analyzer that outranks analyzer-static', () => {
  const analyzer = plugin.create({});
  assert.is(plugin.id, 'analyzer-node');
  assert.is(analyzer.id, 'analyzer-node');
  assert.ok(analyzer.priority > new StaticAnalyzer().priority);
});

test('no package.json at the root: not a Node.js project', async () => {
  assert.is(await detect({ 'index.html': '<h1>hi</h1>' }), null);
  assert.is(await detect({ 'web/package.json': {}, 'index.html': '' }), null);
  assert.is(await detect({ 'index.html': '' }, { runtime: 'static' }), null);
});

test('runtime=node without package.json is analyze_no_package_json', async () => {
  const err = await refused({ 'server.js': '' }, { runtime: 'node' });
  assert.is(err.code, 'analyze_no_package_json');
  assert.match(err.message, /package\.json/);
  assert.match(err.message, /root_directory/);
});

test(
  'package.json that is not JSON, not an object or has mistyped fields is ' + 'analyze_invalid_package_json',
  async () => {
    const cases: [string, RegExp][] = [
      ['{ "name": "x", }', /not valid JSON/],
      ['', /not valid JSON/],
      ['[1, 2]', /JSON object, not an array/],
      ['null', /JSON object, not null/],
      ['"app"', /JSON object, not a string/],
      ['{"scripts": ["build"]}', /"scripts" must be an object/],
      ['{"scripts": {"start": 1}}', /"scripts\.start" must be a string/],
      ['{"dependencies": "vite"}', /"dependencies" must be an object/],
      ['{"engines": {"node": 20}}', /"engines\.node" must be a string/],
      ['{"main": true}', /"main" must be a string/],
    ];
    for (const [text, problem] of cases) {
      const err = await refused({ 'package.json': text, 'server.js': '' });
      assert.is(err.code, 'analyze_invalid_package_json', text);
      assert.match(err.message, problem, text);
    }
  },
);

test('package.json with a byte order mark is read', async () => {
  const d = await detect({ 'package.json': '\uFEFF{"scripts":{"start":"node app.js"}}' });
  assert.is(d?.startCommand, 'npm start');
});

test('a server: every field is chosen and every choice has a reason', async () => {
  const d = await detect({
    'package.json': { scripts: { start: 'node server.js' }, dependencies: { express: '^4' } },
    'package-lock.json': '{}',
    'server.js': '',
  });
  assert.equal(d, {
    runtime: 'node',
    framework: 'express',
    outputDir: '.',
    installCommand: 'npm ci --no-audit --no-fund',
    buildCommand: null,
    startCommand: 'npm start',
    packageManager: 'npm',
    nodeVersion: HOST_MAJOR,
    reasons: d!.reasons,
    warnings: [],
  });
  assert.equal(Object.keys(d!.reasons).sort(), REASON_KEYS);
  assert.match(d!.reasons.start_command, /scripts\.start/);
  assert.match(d!.reasons.framework, /express is a dependency/);
  assert.match(d!.reasons.install_command, /package-lock\.json/);
});

test('a plain package with a build script and no server is a static site built to dist', async () => {
  const d = await detect({ 'package.json': { scripts: { build: 'node make.js' } }, 'make.js': '' });
  assert.is(d?.runtime, 'static');
  assert.is(d?.framework, null);
  assert.is(d?.buildCommand, 'npm run build');
  assert.is(d?.outputDir, 'dist');
  assert.is(d?.installCommand, 'npm install --no-audit --no-fund');
  assert.is(d?.startCommand, null);
  assert.equal(Object.keys(d!.reasons).sort(), REASON_KEYS);
  assert.match(d!.reasons.runtime, /build script and no start script/);
  assert.match(d!.reasons.output_dir, /output_directory/);
});

test('a plain package with a build and a start script is a server that builds first', async () => {
  const d = await detect({ 'package.json': { scripts: { build: 'tsc', start: 'node dist/index.js' } } });
  assert.is(d?.runtime, 'node');
  assert.is(d?.buildCommand, 'npm run build');
  assert.is(d?.startCommand, 'npm start');
  assert.is(d?.outputDir, '.');
});

test('package.json that only holds tooling next to index.html is left to analyzer-static', async () => {
  assert.is(await detect({ 'package.json': { devDependencies: { prettier: '3' } }, 'index.html': '' }), null);
  assert.is(await detect({ 'package.json': {}, 'index.html': '' }, { runtime: 'static' }), null);
});

test('runtime=static with a package.json builds it and serves the output', async () => {
  const d = await detect(
    { 'package.json': { scripts: { build: 'x', start: 'node server.js' } }, 'server.js': '' },
    { runtime: 'static' },
  );
  assert.is(d?.runtime, 'static');
  assert.is(d?.buildCommand, 'npm run build');
  assert.is(d?.startCommand, null);
  assert.is(d?.outputDir, 'dist');
  assert.is(d?.reasons.runtime, 'project setting runtime');
});

test('runtime=static on a server framework warns that the build may not write static files', async () => {
  const d = await detect({ 'package.json': { dependencies: { next: '15' } } }, { runtime: 'static' });
  assert.is(d?.runtime, 'static');
  assert.is(d?.buildCommand, 'npx --no-install next build');
  assert.match(d!.warnings.join('\n'), /runtime static is set but nextjs runs as a server/);
});

test('runtime=node forces a server, even for a static framework', async () => {
  const d = await detect(
    { 'package.json': { scripts: { build: 'vite build', start: 'vite preview' }, devDependencies: { vite: '5' } } },
    { runtime: 'node' },
  );
  assert.is(d?.runtime, 'node');
  assert.is(d?.framework, 'vite');
  assert.is(d?.startCommand, 'npm start');
  assert.is(d?.outputDir, '.');
  assert.match(d!.warnings.join('\n'), /runtime node is set but vite builds static files/);
});

test('project settings override every detected value, each reasoned "project setting <key>"', async () => {
  const settings = {
    install_command: 'npm install --legacy-peer-deps',
    build_command: 'npm run compile',
    start_command: 'node dist/main.js',
    output_directory: 'app',
    node_version: '>=18',
    framework: 'nestjs',
  };
  const d = await detect(
    {
      'package.json': {
        scripts: { build: 'tsc', start: 'node server.js' },
        dependencies: { express: '4' },
        engines: { node: '>=99' },
      },
      'yarn.lock': '',
    },
    settings,
  );
  assert.is(d?.installCommand, settings.install_command);
  assert.is(d?.buildCommand, settings.build_command);
  assert.is(d?.startCommand, settings.start_command);
  assert.is(d?.outputDir, 'app');
  assert.is(d?.nodeVersion, '>=18');
  assert.is(d?.framework, 'nestjs');
  assert.is(d?.packageManager, 'yarn');
  for (const [key, field] of [
    ['install_command', 'install_command'],
    ['build_command', 'build_command'],
    ['start_command', 'start_command'],
    ['output_dir', 'output_directory'],
    ['framework', 'framework'],
  ]) {
    assert.is(d!.reasons[key], `project setting ${field}`);
  }
  assert.match(d!.reasons.node_version, /^project setting node_version/);
});

test("the project setting framework picks that framework's defaults", async () => {
  const d = await detect({ 'package.json': { dependencies: { react: '18' } } }, { framework: 'create-react-app' });
  assert.is(d?.runtime, 'static');
  assert.is(d?.buildCommand, 'npx --no-install react-scripts build');
  assert.is(d?.outputDir, 'build');
});

test('a start_command setting makes a package without any start file a server', async () => {
  const d = await detect({ 'package.json': {}, 'app/run.js': '' }, { start_command: 'node app/run.js' });
  assert.is(d?.runtime, 'node');
  assert.is(d?.startCommand, 'node app/run.js');
});

test('the upload option skip_build drops the build but keeps the output directory', async () => {
  const d = await detect(
    { 'package.json': { scripts: { build: 'vite build' }, devDependencies: { vite: '5' } }, 'dist/index.html': '' },
    { skip_build: true },
  );
  assert.is(d?.runtime, 'static');
  assert.is(d?.buildCommand, null);
  assert.is(d?.reasons.build_command, 'upload option skip_build');
  assert.is(d?.installCommand, null);
  assert.is(d?.outputDir, 'dist');
});

test('a long packageManager is an analysis error naming it; long scripts are quoted cut in the reasons', async () => {
  const err = await refused({
    'package.json': { packageManager: 'npm@10.' + '1'.repeat(1000), scripts: { start: 'x' } },
  });
  assert.is(err.code, 'analyze_invalid_package_json');
  assert.match(err.message, '"packageManager" is 1007 characters long; Hoist reads at most 256');
  const long = 'echo ' + 'x'.repeat(400_000);
  const d = await detect({
    'package.json': { packageManager: 'left@' + 'y'.repeat(250), scripts: { build: long, start: long } },
  });
  for (const text of [...Object.values(d!.reasons), ...d!.warnings]) assert.ok(text.length < 400, text.slice(0, 80));
  assert.match(d!.reasons.build_command, `scripts.build in package.json ("echo ${'x'.repeat(195)}…")`);
  assert.match(d!.reasons.start_command, '…")');
  assert.ok(d!.warnings.some((w) => w.includes('"packageManager" is "left@')));
});

test.run();
