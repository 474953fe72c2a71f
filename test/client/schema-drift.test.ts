import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { IDEMPOTENT_WRITES } from '../../client/hoist-client.js';
import { clientTypes, openApiDocument, schemaFile } from '../../scripts/gen-client-types.js';

test(
  'client/schema.d.ts is what the OpenAPI document of the routes generates (run ' +
    'scripts/gen-client-types.ts when it is not)',
  async () => {
    const fresh = await clientTypes();
    assert.ok(
      readFileSync(schemaFile, 'utf8') === fresh,
      'client/schema.d.ts is out of date: node --import tsx scripts/gen-client-types.ts',
    );
  },
);

test('the client gives an Idempotency-Key to exactly the writes whose route declares one', async () => {
  const doc = await openApiDocument();
  const declared: string[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {}))
    for (const [method, op] of Object.entries(item as Record<string, { parameters?: { name: string; in: string }[] }>))
      if (op.parameters?.some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key'))
        declared.push(`${method.toUpperCase()} ${path}`);
  assert.equal([...IDEMPOTENT_WRITES].sort(), declared.sort());
});

test.run();
