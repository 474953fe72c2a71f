import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { detect } from './tree.js';

const server = { scripts: { start: 'node server.js' } };

/** Package manager, install command and their reasons for a server with `extra` files. */
async function pmOf(extra: Record<string, string>, pkg: object = server) {
  const d = await detect({ 'package.json': pkg, 'server.js': '', ...extra });
  return {
    pm: d!.packageManager,
    install: d!.installCommand,
    start: d!.startCommand,
    reasons: d!.reasons,
    warnings: d!.warnings,
  };
}

test('no packageManager field and no lockfile: npm install, with --no-audit --no-fund', async () => {
  const r = await pmOf({});
  assert.is(r.pm, 'npm');
  assert.is(r.install, 'npm install --no-audit --no-fund');
  assert.match(r.reasons.package_manager, /npm is the default/);
  assert.match(r.reasons.install_command, /no npm lockfile/);
});

test('each lockfile selects its package manager and a frozen install', async () => {
  const cases: [string, string, string][] = [
    ['package-lock.json', 'npm', 'npm ci --no-audit --no-fund'],
    ['npm-shrinkwrap.json', 'npm', 'npm ci --no-audit --no-fund'],
    ['pnpm-lock.yaml', 'pnpm', 'pnpm install --frozen-lockfile'],
    ['yarn.lock', 'yarn', 'yarn install --frozen-lockfile'],
    ['bun.lock', 'bun', 'bun install --frozen-lockfile'],
    ['bun.lockb', 'bun', 'bun install --frozen-lockfile'],
  ];
  for (const [lockfile, pm, install] of cases) {
    const r = await pmOf({ [lockfile]: '' });
    assert.is(r.pm, pm, lockfile);
    assert.is(r.install, install, lockfile);
    assert.is(r.reasons.package_manager, `${lockfile} at the root`);
    assert.equal(r.warnings, []);
  }
});

test('a lockfile below the root does not count', async () => {
  assert.is((await pmOf({ 'docs/yarn.lock': '' })).pm, 'npm');
});

test('lockfile precedence: pnpm, then yarn, then bun, then npm, with a warning', async () => {
  let r = await pmOf({ 'package-lock.json': '', 'yarn.lock': '', 'pnpm-lock.yaml': '' });
  assert.is(r.pm, 'pnpm');
  assert.match(r.warnings.join('\n'), /several lockfiles .*pnpm-lock\.yaml wins/);
  r = await pmOf({ 'package-lock.json': '', 'bun.lockb': '', 'yarn.lock': '' });
  assert.is(r.pm, 'yarn');
  r = await pmOf({ 'package-lock.json': '', 'bun.lock': '' });
  assert.is(r.pm, 'bun');
});

test('the packageManager field wins over the lockfiles', async () => {
  const r = await pmOf({ 'package-lock.json': '' }, { ...server, packageManager: 'pnpm@9.1.0+sha512.abc' });
  assert.is(r.pm, 'pnpm');
  assert.is(r.reasons.package_manager, '"packageManager": "pnpm@9.1.0+sha512.abc" in package.json');
  assert.is(r.install, 'pnpm install', 'no pnpm lockfile, so no frozen install');
  assert.is(r.start, 'pnpm start');
  assert.match(r.warnings.join('\n'), /names pnpm but package-lock\.json is also present/);
  const locked = await pmOf({ 'pnpm-lock.yaml': '' }, { ...server, packageManager: 'pnpm@9.1.0' });
  assert.is(locked.install, 'pnpm install --frozen-lockfile');
  assert.equal(locked.warnings, []);
});

test('yarn 2+ installs with --immutable', async () => {
  assert.is(
    (await pmOf({ 'yarn.lock': '' }, { ...server, packageManager: 'yarn@4.1.0' })).install,
    'yarn install --immutable',
  );
  assert.is((await pmOf({ 'yarn.lock': '', '.yarnrc.yml': '' })).install, 'yarn install --immutable');
  assert.is(
    (await pmOf({ 'yarn.lock': '' }, { ...server, packageManager: 'yarn@1.22.19' })).install,
    'yarn install --frozen-lockfile',
  );
});

test('an unknown packageManager field is ignored with a warning', async () => {
  const r = await pmOf({ 'yarn.lock': '' }, { ...server, packageManager: 'deno@2' });
  assert.is(r.pm, 'yarn');
  assert.match(r.warnings.join('\n'), /"deno@2", which Hoist does not know/);
});

test('scripts run through the package manager', async () => {
  const scripts = { build: 'tsc', start: 'node server.js' };
  for (const [lockfile, build, start] of [
    ['package-lock.json', 'npm run build', 'npm start'],
    ['pnpm-lock.yaml', 'pnpm run build', 'pnpm start'],
    ['yarn.lock', 'yarn run build', 'yarn start'],
    ['bun.lock', 'bun run build', 'bun run start'],
  ]) {
    const d = await detect({ 'package.json': { scripts }, [lockfile]: '' });
    assert.is(d?.buildCommand, build);
    assert.is(d?.startCommand, start);
  }
});

test('committed node_modules is used as is: no install', async () => {
  const r = await pmOf({ 'package-lock.json': '', 'node_modules/is-number/index.js': '' });
  assert.is(r.install, null);
  assert.is(r.reasons.install_command, 'committed node_modules is used as is');
});

test('the install_command setting wins over committed node_modules and the lockfile', async () => {
  const d = await detect(
    { 'package.json': server, 'server.js': '', 'node_modules/x/index.js': '', 'pnpm-lock.yaml': '' },
    { install_command: 'pnpm install --offline' },
  );
  assert.is(d?.installCommand, 'pnpm install --offline');
  assert.is(d?.reasons.install_command, 'project setting install_command');
});

test.run();
