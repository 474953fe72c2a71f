import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, KernelError } from '../../adapters/kernel.js';
import { createLogger } from '../../adapters/logger.js';
import { loadPlugins } from '../../adapters/plugin-loader.js';
import { plugins } from '../../adapters/plugins.js';
import { loadConfig } from '../../config/load.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-plugin-loader-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const good = `{ apiVersion: 1, id: 'analyzer-fake', port: 'analyzer', name: 'fake', deps: {},
  create: () => ({ id: 'analyzer-fake', priority: 1, detect: async () => null }) }`;
let n = 0;
/** A plugin module whose source is `source`; returns its path. */
const plugin = (source: string) => {
  const file = join(dir, `plugin-${++n}.mjs`);
  writeFileSync(file, source);
  return file;
};
const refused = async (list: string, ...words: string[]) => {
  const err = await loadPlugins(list, plugins).then(
    () => null,
    (e: Error) => e,
  );
  assert.instance(err, KernelError);
  for (const w of words) assert.ok(err!.message.includes(w), `${err!.message} should name ${w}`);
};

test('a module exporting a definition, or a list of them, loads', async () => {
  const one = await loadPlugins(plugin(`export default ${good};`), plugins);
  assert.equal(
    one.map((p) => p.id),
    ['analyzer-fake'],
  );
  const two = await loadPlugins(plugin(`export default [${good}, ${good.replace(/fake/g, 'other')}];`), plugins);
  assert.equal(
    two.map((p) => p.id),
    ['analyzer-fake', 'analyzer-other'],
  );
});

test('a folder loads through its package.json', async () => {
  const pkg = join(dir, 'pkg');
  mkdirSync(pkg);
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ type: 'module', exports: { '.': './main.js' } }));
  writeFileSync(join(pkg, 'main.js'), `export default ${good};`);
  assert.is((await loadPlugins(pkg, plugins))[0].id, 'analyzer-fake');
});

test('a package that cannot be loaded or exports nothing is refused, naming it', async () => {
  await refused('hoist-plugin-that-does-not-exist', 'hoist-plugin-that-does-not-exist', 'cannot be loaded');
  const file = plugin('export const plugin = {};');
  await refused(file, file, 'no default export');
});

test('an incompatible plugin API version is refused, saying which Hoist supports', async () => {
  await refused(
    plugin(`export default { ...${good}, apiVersion: 2 };`),
    'analyzer-fake',
    'version 2',
    'supports version 1',
  );
  await refused(plugin(`const { apiVersion, ...rest } = ${good}; export default rest;`), 'apiVersion is missing');
});

test('a malformed definition is refused, naming the field', async () => {
  await refused(plugin('export default 42;'), 'not a PluginDefinition');
  await refused(plugin(`export default { ...${good}, id: 'Bad Id' };`), 'id must be');
  await refused(plugin(`export default { ...${good}, port: 'printer' };`), 'unknown port "printer"', 'storage');
  await refused(plugin(`export default { ...${good}, name: '' };`), 'name');
  await refused(plugin(`export default { ...${good}, deps: { config: 'hoist.Config' } };`), 'deps.config');
  await refused(plugin(`export default { ...${good}, create: 'new Fake()' };`), 'create');
});

test('an id or a name already taken is refused', async () => {
  await refused(plugin(`export default { ...${good}, id: 'analyzer-static' };`), 'analyzer-static', 'taken');
  await refused(plugin(`export default { ...${good}, port: 'storage', name: 'local' };`), 'storage-local');
  await refused(plugin(`export default [${good}, ${good}];`), 'analyzer-fake', 'taken');
});

test('start-up refuses a bad plugin with a KernelError, and a plugin needing what nothing provides', async () => {
  const base = { HOIST_DATA_DIR: join(dir, 'data'), HOIST_LOG_LEVEL: 'silent' };
  const start = async (list: string) =>
    boot(loadConfig({ ...base, HOIST_PLUGINS: list }), { log: createLogger('silent') }).then(
      async (k) => (await k.stop(), null),
      (e: Error) => e,
    );
  const bad = await start(plugin(`export default { ...${good}, apiVersion: 99 };`));
  assert.instance(bad, KernelError);
  assert.match(bad!.message, 'version 99');
  const needy = await start(plugin(`export default { ...${good}, deps: { x: Symbol.for('hoist.Nothing') } };`));
  assert.instance(needy, KernelError);
  assert.match(needy!.message, 'plugin analyzer-fake needs hoist.Nothing (deps.x), which nothing provides');
});

test("HOIST_PLUGINS paths are resolved from the working directory, a config file's from its folder", () => {
  const env = { HOIST_DATA_DIR: join(dir, 'data'), HOIST_PLUGINS: './a, some-package ,../b' };
  assert.is(loadConfig(env).plugins, `${join(process.cwd(), 'a')},some-package,${join(process.cwd(), '../b')}`);
  const conf = join(dir, 'conf');
  mkdirSync(conf);
  writeFileSync(join(conf, 'hoist.json'), JSON.stringify({ plugins: ['./p', 'pkg'] }));
  assert.is(
    loadConfig({ HOIST_DATA_DIR: join(dir, 'data'), HOIST_CONFIG: join(conf, 'hoist.json') }).plugins,
    `${join(conf, 'p')},pkg`,
  );
});

test.run();
