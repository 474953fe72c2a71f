import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../../config/load.js';
import { StageError } from '../../../core/errors.js';
import type { Detection } from '../../../core/ports/analyzer.js';
import { NodeBuilder } from '../../../plugins/builder-node/node-builder.js';
import { testSandbox } from '../../helpers/sandbox.js';

// Hostile install scripts that write little the disk's blocks show, but much for the host: sparse files (which the
// host's packing of the artifact reads in full), folders and empty files (inodes). HOIST_BUILD_DISK_MB is 64 here.
const root = mkdtempSync(join(tmpdir(), 'hoist-builder-node-disk-'));
// rm(1): a build below makes a tree deeper than PATH_MAX, which Node.js' rm cannot remove.
test.after(() => void execFileSync('rm', ['-rf', root]));
const sandbox = await testSandbox(root);
let n = 0;

const detection: Detection = {
  runtime: 'node',
  framework: null,
  outputDir: '.',
  installCommand: 'npm install --no-audit --no-fund',
  buildCommand: null,
  startCommand: 'node index.js',
  packageManager: 'npm',
  nodeVersion: null,
  reasons: {},
  warnings: [],
};

/** Builds a project whose postinstall script is `script`; resolves the StageError it failed with (or null). */
async function install(script: string): Promise<{ error: StageError | null; workspace: string; log: string[] }> {
  const workspace = join(root, `build-${++n}`, 'src');
  mkdirSync(workspace, { recursive: true });
  writeFileSync(
    join(workspace, 'package.json'),
    JSON.stringify({ name: 'x', version: '1.0.0', scripts: { postinstall: script } }),
  );
  const config = loadConfig({ HOIST_DATA_DIR: join(root, 'data') }, { buildDiskMb: 64, buildTimeoutSeconds: 120 });
  const log: string[] = [];
  try {
    await new NodeBuilder(config, sandbox).build({
      workspace,
      detection,
      env: {},
      signal: new AbortController().signal,
      log: (l) => log.push(l),
      progress: () => {},
    });
    return { error: null, workspace, log };
  } catch (err) {
    if (!(err instanceof StageError)) throw err;
    return { error: err, workspace, log };
  }
}

const apparentMiB = (dir: string) =>
  Number(execFileSync('du', ['-s', '--apparent-size', '--block-size=1M', dir]).toString().split('\t')[0]);

test('sparse files over the disk limit, written in a burst before any check, fail with build_disk_limit', async () => {
  // 30 x 60 MiB of holes take no block; without the end-of-run measure a run this short is never checked.
  const { error, workspace, log } = await install('mkdir out; for i in $(seq 1 30); do truncate -s 60M out/f$i; done');
  assert.ok(apparentMiB(workspace) > 64, 'the files were written');
  assert.is(error?.code, 'build_disk_limit', `${error?.message}\n${log.join('\n')}`);
  assert.match(error!.message, '64 MiB');
  assert.match(error!.message, 'HOIST_BUILD_DISK_MB');
});

test('20,000 folders (80 MiB of blocks) fail with build_disk_limit', async () => {
  const { error, log } = await install('mkdir out; cd out; seq 1 20000 | xargs mkdir');
  assert.is(error?.code, 'build_disk_limit', `${error?.message}\n${log.join('\n')}`);
});

test('empty files past the limit (an inode each) fail with build_disk_limit', async () => {
  const { error, log } = await install('mkdir out; cd out; seq 1 20000 | xargs touch');
  assert.is(error?.code, 'build_disk_limit', `${error?.message}\n${log.join('\n')}`);
});

test('data written below a folder deeper than PATH_MAX counts: the build fails with build_disk_limit', async () => {
  // 800 folders of 6 characters: 4,800 bytes of path, past PATH_MAX (4,096); then 5 x 20 MiB there (a file is capped
  // at the limit), over the 64 MiB limit.
  const deep =
    "const fs = require('fs'); for (let i = 0; i < 800; i++) { fs.mkdirSync('aaaaa'); process.chdir('aaaaa'); } " +
    "for (let i = 0; i < 5; i++) fs.writeFileSync('f' + i, Buffer.alloc(20 * 1048576, 1)); console.log('wrote deep')";
  const { error, log } = await install(`mkdir out; cd out; node -e "${deep}"`);
  assert.ok(log.includes('wrote deep'), log.join('\n'));
  assert.is(error?.code, 'build_disk_limit', `${error?.message}\n${log.join('\n')}`);
});

test('an install within the limit still succeeds', async () => {
  const { error, log } = await install('mkdir out; cd out; seq 1 500 | xargs touch; head -c 1000000 /dev/zero > big');
  assert.is(error, null, `${error?.message}\n${log.join('\n')}`);
});

test.run();
