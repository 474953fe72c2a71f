import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { HoistConfig } from '../../../config/schema.js';
import type { Detection } from '../../../core/ports/analyzer.js';
import { StaticBuilder } from '../../../plugins/builder-static/index.js';
import { testSandbox } from '../../helpers/sandbox.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-static-builder-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

const config = {
  buildTimeoutSeconds: 60,
  buildMemoryMb: 256,
  buildProcesses: 64,
  buildDiskMb: 64,
  buildOutputBytes: 1_000_000,
} as HoistConfig;
const builder = new StaticBuilder(config, await testSandbox(dir));
const detection = (outputDir: string, buildCommand: string | null = null): Detection => ({
  runtime: 'static',
  framework: null,
  outputDir,
  installCommand: null,
  buildCommand,
  startCommand: null,
  packageManager: null,
  nodeVersion: null,
  reasons: {},
  warnings: [],
});

/** What `build` says of this tree on disk: the output folder (relative) or the error code. */
async function built(files: string[], outputDir: string): Promise<string> {
  const workspace = join(dir, `tree-${++n}`);
  mkdirSync(workspace);
  for (const f of files) {
    mkdirSync(dirname(join(workspace, f)), { recursive: true });
    writeFileSync(join(workspace, f), 'x');
  }
  try {
    const out = await builder.build({
      workspace,
      detection: detection(outputDir),
      env: {},
      signal: new AbortController().signal,
      log: () => {},
      progress: () => {},
    });
    return out.outputDir === workspace ? '.' : out.outputDir.slice(workspace.length + 1);
  } catch (err) {
    return (err as { code: string }).code;
  }
}

/** What `outputWithoutBuild` says of the same tree, from its file list alone. */
function listed(files: string[], outputDir: string): string {
  try {
    return builder.outputWithoutBuild({ detection: detection(outputDir), files, log: () => {} })!;
  } catch (err) {
    return (err as { code: string }).code;
  }
}

test('with nothing to run, the file list gives the answer the built tree gives', async () => {
  const cases: [string[], string, string][] = [
    [['index.html', 'a.css'], '.', '.'],
    [['index.html', 'a.css'], './', '.'],
    [['index.html', 'public/index.html', 'public/a.css'], 'public', 'public'],
    [['index.html', 'public/index.html'], './public/', 'public'],
    [['index.html', 'public/sub/index.html'], 'public/sub', 'public/sub'],
    [['index.html'], 'docs', 'build_output_missing'],
    [['index.html', 'docs'], 'docs', 'build_output_missing'],
    [['index.html', 'docs/readme.md'], 'docs', 'build_output_no_index_html'],
    [['index.html'], '../elsewhere', 'build_output_invalid'],
    [['index.html'], 'a/../..', 'build_output_invalid'],
    [['index.html'], '/srv', 'build_output_invalid'],
  ];
  for (const [files, outputDir, expected] of cases) {
    assert.is(listed(files, outputDir), expected, `${outputDir} of ${files.join(', ')}`);
    assert.is(await built(files, outputDir), expected, `build() agrees: ${outputDir} of ${files.join(', ')}`);
  }
});

test('a build command means there is something to run; the plain site says so in the log', () => {
  assert.is(
    builder.outputWithoutBuild({ detection: detection('dist', 'npm run build'), files: ['index.html'], log: () => {} }),
    null,
  );
  const lines: string[] = [];
  builder.outputWithoutBuild({ detection: detection('.'), files: ['index.html'], log: (l) => lines.push(l) });
  assert.equal(lines, ['Plain static site: nothing to build.']);
});

test.run();
