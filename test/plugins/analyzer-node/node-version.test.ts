import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { detect, HOST_MAJOR, refused, type Files } from './tree.js';

const HOST = process.versions.node;
const app = (engines?: string): Files => ({
  'package.json': { scripts: { start: 'node server.js' }, ...(engines ? { engines: { node: engines } } : {}) },
  'server.js': '',
});

test("no engines.node, .nvmrc or .node-version: the host's major is the default", async () => {
  const d = await detect(app());
  assert.is(d?.nodeVersion, HOST_MAJOR);
  assert.match(d!.reasons.node_version, new RegExp(`host's Node ${HOST_MAJOR} is the default`));
});

test('engines.node is used when the host satisfies it', async () => {
  const d = await detect(app(`>=${Number(HOST_MAJOR) - 2}`));
  assert.is(d?.nodeVersion, `>=${Number(HOST_MAJOR) - 2}`);
  assert.match(d!.reasons.node_version, /^engines\.node in package\.json/);
});

test('precedence: engines.node, then .nvmrc, then .node-version', async () => {
  const files = { ...app(`${HOST_MAJOR}.x`), '.nvmrc': `v${HOST_MAJOR}\n`, '.node-version': HOST };
  assert.is((await detect(files))?.nodeVersion, `${HOST_MAJOR}.x`);
  const noEngines = { ...app(), '.nvmrc': `# pinned\nv${HOST_MAJOR}   # current LTS\n`, '.node-version': HOST };
  const d = await detect(noEngines);
  assert.is(d?.nodeVersion, `v${HOST_MAJOR}`);
  assert.match(d!.reasons.node_version, /^\.nvmrc/);
  const onlyNodeVersion = await detect({ ...app(), '.node-version': `${HOST}\n` });
  assert.is(onlyNodeVersion?.nodeVersion, HOST);
  assert.match(onlyNodeVersion!.reasons.node_version, /^\.node-version/);
});

test('the node_version setting overrides engines.node, and is checked the same way', async () => {
  const d = await detect(app('>=99'), { node_version: HOST_MAJOR });
  assert.is(d?.nodeVersion, HOST_MAJOR);
  assert.match(d!.reasons.node_version, /^project setting node_version/);
  const err = await refused(app(HOST_MAJOR), { node_version: '>=99' });
  assert.is(err.code, 'analyze_node_version_unavailable');
  assert.is(
    err.message,
    `This project asks for Node >=99 (from project setting node_version); this host ` +
      `runs Node ${HOST}. Change node_version in the project settings to a range that ` +
      `includes ${HOST_MAJOR}.`,
  );
});

test('a version the host cannot provide is analyze_node_version_unavailable, saying what to change', async () => {
  let err = await refused(app('>=99'));
  assert.is(err.code, 'analyze_node_version_unavailable');
  assert.is(
    err.message,
    `This project asks for Node >=99 (from engines.node); this host runs Node ` +
      `${HOST}. Change engines.node to a range that includes ${HOST_MAJOR}, or set ` +
      `node_version in the project settings.`,
  );
  assert.equal(err.details, { asked: '>=99', source: 'engines.node', host: HOST });
  err = await refused({ ...app(), '.nvmrc': '16.20.2' });
  assert.match(err.message, /asks for Node 16\.20\.2 \(from \.nvmrc\).*Change \.nvmrc to a range/);
  err = await refused({ ...app(), '.node-version': '<18' });
  assert.match(err.message, /\(from \.node-version\)/);
});

test(
  'nvm aliases: lts/iron is 20, other LTS names must match the host, newest-release ' +
    'aliases use the host with a warning',
  async () => {
    if (HOST_MAJOR === '20') assert.is((await detect({ ...app(), '.nvmrc': 'lts/iron' }))?.nodeVersion, '20');
    else assert.is((await refused({ ...app(), '.nvmrc': 'lts/iron' })).code, 'analyze_node_version_unavailable');
    const err = await refused({ ...app(), '.nvmrc': 'lts/hydrogen' });
    assert.is(err.code, 'analyze_node_version_unavailable');
    assert.match(err.message, /asks for Node lts\/hydrogen \(Node 18\) \(from \.nvmrc\)/);
    for (const alias of ['lts/*', 'node', 'stable']) {
      const d = await detect({ ...app(), '.nvmrc': alias });
      assert.is(d?.nodeVersion, HOST_MAJOR, alias);
      assert.match(
        d!.warnings.join('\n'),
        new RegExp(`asks for "${alias.replace('*', '\\*')}"; this host provides Node ${HOST}`),
      );
    }
  },
);

test('something that is not a version is analyze_invalid_node_version', async () => {
  for (const files of [app('banana'), { ...app(), '.nvmrc': 'lts/unknown' }]) {
    const err = await refused(files);
    assert.is(err.code, 'analyze_invalid_node_version');
    assert.match(err.message, /asks for Node "(banana|lts\/unknown)"/);
  }
});

test('a 1 MB engines.node or a long .nvmrc is an analysis error naming it, before semver reads it', async () => {
  const started = performance.now();
  const err = await refused(app('1 || '.repeat(170_000) + '1'));
  assert.ok(performance.now() - started < 300, `${Math.round(performance.now() - started)} ms`);
  assert.is(err.code, 'analyze_invalid_package_json');
  assert.match(err.message, '"engines.node" is 850001 characters long; Hoist reads at most 256');
  const nvmrc = await refused({ ...app(), '.nvmrc': `${'>=1 '.repeat(100)}\n` });
  assert.is(nvmrc.code, 'analyze_invalid_node_version');
  assert.match(nvmrc.message, '.nvmrc is 399 characters long');
  assert.ok(nvmrc.message.length < 300, nvmrc.message);
  assert.is(
    (await detect(app(`>=${Number(HOST_MAJOR) - 2}`.padEnd(256, ' '))))?.nodeVersion,
    `>=${Number(HOST_MAJOR) - 2}`,
  );
});

test.run();
