import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { detect, refused, type Files } from './tree.js';

/** The start command and its reason for `files`. */
async function startOf(files: Files) {
  const d = await detect(files);
  assert.is(d?.runtime, 'node');
  return [d!.startCommand, d!.reasons.start_command];
}

test('scripts.start comes first', async () => {
  assert.equal(
    await startOf({
      'package.json': { scripts: { start: 'node app.js' }, main: 'lib.js' },
      'lib.js': '',
      'server.js': '',
      'index.js': '',
    }),
    ['npm start', 'scripts.start in package.json ("node app.js")'],
  );
});

test('then main, resolved the way Node does', async () => {
  assert.equal(await startOf({ 'package.json': { main: 'lib/app.js' }, 'lib/app.js': '', 'server.js': '' }), [
    'node lib/app.js',
    '"main": "lib/app.js" in package.json',
  ]);
  assert.equal((await startOf({ 'package.json': { main: './lib/app' }, 'lib/app.js': '' }))[0], 'node lib/app.js');
  assert.equal((await startOf({ 'package.json': { main: 'lib' }, 'lib/index.js': '' }))[0], 'node lib/index.js');
});

test('a main that is not in the archive is skipped', async () => {
  assert.equal(await startOf({ 'package.json': { main: 'index.js' }, 'server.mjs': '' }), [
    'node server.mjs',
    'server.mjs at the root',
  ]);
});

test('then server.js, server.mjs, server.cjs, in that order', async () => {
  assert.equal(
    (await startOf({ 'package.json': {}, 'server.js': '', 'server.mjs': '', 'index.js': '' }))[0],
    'node server.js',
  );
  assert.equal((await startOf({ 'package.json': {}, 'server.mjs': '', 'server.cjs': '' }))[0], 'node server.mjs');
  assert.equal((await startOf({ 'package.json': {}, 'server.cjs': '', 'index.js': '' }))[0], 'node server.cjs');
});

test('then index.js', async () => {
  assert.equal(await startOf({ 'package.json': {}, 'index.js': '' }), ['node index.js', 'index.js at the root']);
});

test('no way to start is analyze_no_start_command saying what to add', async () => {
  for (const files of [
    { 'package.json': {} },
    { 'package.json': { main: 'missing.js' }, 'src/server.js': '' },
  ] as Files[]) {
    const err = await refused(files);
    assert.is(err.code, 'analyze_no_start_command');
    assert.is(
      err.message,
      'No way to start this app: add a "start" script to package.json (e.g. "start": ' +
        '"node server.js"), a "main" field, or a server.js / index.js file, or set ' +
        'start_command in the project settings.',
    );
  }
  assert.is(
    (await refused({ 'package.json': { scripts: { build: 'tsc' } }, 'index.html': '' }, { runtime: 'node' })).code,
    'analyze_no_start_command',
  );
});

test('the start_command setting wins over scripts.start', async () => {
  const d = await detect({ 'package.json': { scripts: { start: 'node a.js' } } }, { start_command: 'node b.js' });
  assert.is(d?.startCommand, 'node b.js');
  assert.is(d?.reasons.start_command, 'project setting start_command');
});

test.run();
