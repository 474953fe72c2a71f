import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, loadConfig } from '../../config/load.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-config-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const throwsNaming = (fn: () => unknown, ...words: string[]) => {
  try {
    fn();
  } catch (err) {
    assert.instance(err, ConfigError);
    for (const w of words) assert.ok((err as Error).message.includes(w), `${(err as Error).message} should name ${w}`);
    return;
  }
  assert.unreachable('no error');
};

test('defaults apply, then the file, then HOIST_* variables', () => {
  const file = join(dir, 'a.json');
  writeFileSync(file, JSON.stringify({ port: 4000, appsDomain: 'apps.example.com' }));
  const c = loadConfig({ HOIST_CONFIG: file, HOIST_PORT: '4100' });
  assert.is(c.port, 4100);
  assert.is(c.appsDomain, 'apps.example.com');
  assert.is(c.db, 'sqlite');
  assert.is(c.edgePort, 8080);
});

test('a bad value names its key', () => {
  throwsNaming(() => loadConfig({ HOIST_PORT: 'abc' }), 'port', 'HOIST_PORT');
  throwsNaming(() => loadConfig({ HOIST_PORT: '70000' }), 'HOIST_PORT', '65535');
  throwsNaming(() => loadConfig({ HOIST_TRUST_PROXY: 'maybe' }), 'HOIST_TRUST_PROXY');
  throwsNaming(() => loadConfig({ HOIST_LOG_LEVEL: 'loud' }), 'HOIST_LOG_LEVEL', 'info');
});

test('an unknown key or a broken file is refused', () => {
  const unknown = join(dir, 'b.json');
  writeFileSync(unknown, JSON.stringify({ prot: 1 }));
  throwsNaming(() => loadConfig({ HOIST_CONFIG: unknown }), 'prot');
  const broken = join(dir, 'c.json');
  writeFileSync(broken, '{ nope');
  throwsNaming(() => loadConfig({ HOIST_CONFIG: broken }), broken);
  throwsNaming(() => loadConfig({ HOIST_CONFIG: join(dir, 'missing.json') }), 'missing.json');
});

test.run();
