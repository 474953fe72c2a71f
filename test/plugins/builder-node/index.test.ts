import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { plugins } from '../../../adapters/plugins.js';
import { loadConfig } from '../../../config/load.js';
import type { Detection } from '../../../core/ports/analyzer.js';
import type { Builder } from '../../../core/ports/builder.js';
import { detection } from '../../contract/builder.js';

const config = loadConfig({ HOIST_DATA_DIR: '/tmp/hoist-unused' });
// As the kernel registers them, and as the Build stage picks: the first builder that supports the detection.
const builders = await Promise.all(
  plugins.filter((p) => p.port === 'builder').map((p) => p.create({ config }) as Builder),
);
const pick = (d: Partial<Detection>) => builders.find((b) => b.supports(detection(d)))?.id;

test('Node.js projects of either runtime go to builder-node, ahead of builder-static', () => {
  assert.is(
    pick({ runtime: 'static', packageManager: 'npm', outputDir: 'dist', buildCommand: 'npm run build' }),
    'builder-node',
  );
  assert.is(pick({ runtime: 'node', packageManager: 'pnpm', startCommand: 'pnpm start' }), 'builder-node');
});

test('plain static sites (no package manager) still go to builder-static', () => {
  assert.is(pick({ runtime: 'static' }), 'builder-static');
  assert.is(pick({ runtime: 'static', buildCommand: 'sh make-site.sh', outputDir: 'public' }), 'builder-static');
});

test.run();
