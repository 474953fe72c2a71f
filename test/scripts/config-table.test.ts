import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { settings } from '../../config/schema.js';
import { configTable, tableIn } from '../../scripts/config-table.js';

test('the README configuration table is the generated one (node --import tsx scripts/config-table.ts --write)', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const table = tableIn(readme);
  assert.ok(table !== null, 'README.md has no <!-- config:start --> ... <!-- config:end --> markers');
  assert.fixture(table, configTable());
});

test('the table has one row per setting, naming its environment variable and default', () => {
  const rows = configTable().split('\n').slice(2);
  assert.is(rows.length, Object.keys(settings).length);
  assert.ok(rows.includes('| `HOIST_PORT` | `port` | integer | `3000` | API port. From 0 to 65535. |'));
  assert.ok(rows.some((r) => r.startsWith('| `HOIST_DATABASE_URL` | `databaseUrl` | secret |  |')));
});

test.run();
