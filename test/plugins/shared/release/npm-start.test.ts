import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { directStart } from '../../../../plugins/shared/release/npm-start.js';

const root = mkdtempSync(join(tmpdir(), 'hoist-npm-start-'));
let n = 0;
/** A fresh release directory holding `files`. */
function release(files: Record<string, string>): string {
  const dir = join(root, String(++n));
  mkdirSync(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}
const pkg = (fields: Record<string, unknown>) => JSON.stringify({ name: 'app', version: '1.2.3', ...fields });
/** Runs `command` as a release's sandbox does (`/bin/sh -c`, in `dir`, a bare environment); resolves its stdout. */
async function run(command: string, dir: string, env: Record<string, string> = {}): Promise<string> {
  const { stdout } = await promisify(execFile)('/bin/sh', ['-c', command], {
    cwd: dir,
    env: { PATH: '/usr/bin:/bin', ...env },
  });
  return stdout;
}

test('npm start runs the start script without npm, with the variables npm gives it', async () => {
  const script = `echo "$npm_lifecycle_event|$npm_package_name|$npm_package_version|$npm_package_json|$INIT_CWD"`;
  const dir = release({ 'package.json': pkg({ scripts: { start: script } }) });
  for (const command of ['npm start', '  npm   run start ', 'npm run-script start']) {
    const direct = await directStart(command, dir, {});
    assert.not.match(direct, /\bnpm (start|run)/, command);
    assert.is(await run(direct, dir), `start|app|1.2.3|${dir}/package.json|${dir}\n`, command);
  }
});

test('the script runs under /bin/sh -c with node_modules/.bin first on PATH, quotes kept', async () => {
  const dir = release({
    'package.json': pkg({
      name: "it's",
      config: { port: 8080, tags: ['a', 'b'] },
      engines: { node: '>=20' },
      bin: { 'my-cli': 'cli.js' },
      scripts: {
        start:
          `tool 'one two' && echo "$npm_package_config_port $npm_package_config_tags_1 $npm_package_name" && ` +
          'echo "$npm_lifecycle_script" | cut -c1-14',
      },
    }),
  });
  mkdirSync(join(dir, 'node_modules/.bin'), { recursive: true });
  writeFileSync(join(dir, 'node_modules/.bin/tool'), '#!/bin/sh\necho "tool:$1"\n', { mode: 0o755 });
  const direct = await directStart('npm start', dir, {});
  assert.is(await run(direct, dir), `tool:one two\n8080 b it's\ntool 'one two'\n`);
});

test('anything npm would do more, or a command other than npm start, is left as it is', async () => {
  const start = { start: 'node server.js' };
  const cases: [string, string, Record<string, string>, Record<string, string>][] = [
    ['another command', 'node server.js', { 'package.json': pkg({ scripts: start }) }, {}],
    ['arguments', 'npm start -- --port 1', { 'package.json': pkg({ scripts: start }) }, {}],
    ['another script', 'npm run serve', { 'package.json': pkg({ scripts: { serve: 'x' } }) }, {}],
    ['a prestart script', 'npm start', { 'package.json': pkg({ scripts: { ...start, prestart: 'x' } }) }, {}],
    ['a poststart script', 'npm start', { 'package.json': pkg({ scripts: { ...start, poststart: 'x' } }) }, {}],
    ['a project .npmrc', 'npm start', { 'package.json': pkg({ scripts: start }), '.npmrc': 'script-shell=bash' }, {}],
    ['npm settings in the env', 'npm start', { 'package.json': pkg({ scripts: start }) }, { NPM_CONFIG_X: '1' }],
    ['no start script', 'npm start', { 'package.json': pkg({ scripts: {} }) }, {}],
    ['no scripts', 'npm start', { 'package.json': pkg({}) }, {}],
    ['scripts not an object', 'npm start', { 'package.json': pkg({ scripts: 'x' }) }, {}],
    ['a start script not a string', 'npm start', { 'package.json': pkg({ scripts: { start: 1 } }) }, {}],
    ['no package.json', 'npm start', {}, {}],
    ['package.json not JSON', 'npm start', { 'package.json': '{ nope' }, {}],
    ['package.json an array', 'npm start', { 'package.json': '[]' }, {}],
    ['package.json null', 'npm start', { 'package.json': 'null' }, {}],
    ['package.json over 1 MB', 'npm start', { 'package.json': pkg({ scripts: start, x: 'y'.repeat(1 << 20) }) }, {}],
  ];
  for (const [what, command, files, env] of cases)
    assert.is(await directStart(command, release(files), env), command, what);
});

test('a package.json that is a symbolic link is not read', async () => {
  const target = release({ 'package.json': pkg({ scripts: { start: 'node server.js' } }) });
  const dir = release({});
  symlinkSync(join(target, 'package.json'), join(dir, 'package.json'));
  assert.is(await directStart('npm start', dir, {}), 'npm start');
});

test.after(() => rmSync(root, { recursive: true, force: true }));
test.run();
