import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DataDirWorkspaces, sweepWorkspaces, withWorkspace } from '../../../core/deployments/workspace.js';

const dataDir = mkdtempSync(join(tmpdir(), 'hoist-sweep-'));
test.after(() => rmSync(dataDir, { recursive: true, force: true }));

test('workspaces left by a process that is gone are removed at start; a live process keeps its own', async () => {
  const dead = spawnSync('true').pid!;
  const work = join(dataDir, 'work');
  const make = (name: string) => {
    mkdirSync(join(work, name, 'src'), { recursive: true });
    writeFileSync(join(work, name, 'src', 'upload.txt'), 'sources');
  };
  make(`build-op1-p${dead}-AbC123`);
  make(`analyze-op2-p${process.ppid}-XyZ789`);
  make(`deploy-op3-p${process.pid}-QqQ000`);
  const swept = await sweepWorkspaces(dataDir);
  assert.is(swept, 2);
  assert.not.ok(existsSync(join(work, `build-op1-p${dead}-AbC123`)), "the dead process' build tree is gone");
  assert.not.ok(existsSync(join(work, `deploy-op3-p${process.pid}-QqQ000`)), 'this process made none before its start');
  assert.ok(existsSync(join(work, `analyze-op2-p${process.ppid}-XyZ789`)), 'a live process keeps its workspace');
});

test('a workspace is tagged with its process and removed when done', async () => {
  let seen = '';
  await withWorkspace(dataDir, 'build-op9', async (dir) => {
    seen = await dir();
    assert.is(await dir(), seen, 'one directory, however often it is asked for');
    assert.match(seen, new RegExp(`build-op9-p${process.pid}-`));
  });
  assert.not.ok(existsSync(seen));
});

test('a workspace nobody asked for is never made', async () => {
  const before = readdirSync(join(dataDir, 'work'));
  assert.is(await withWorkspace(dataDir, 'analyze-op10', async () => 7), 7);
  assert.equal(readdirSync(join(dataDir, 'work')), before);
});

test(
  'the Workspaces port plugins get: a fresh directory under the data directory, ' + 'removed even on failure',
  async () => {
    const workspaces = new DataDirWorkspaces(dataDir);
    let seen = '';
    const result = await workspaces.run('deploy-d1', async (dir) => {
      seen = dir;
      writeFileSync(join(dir, 'artifact.zip'), 'zip');
      return 42;
    });
    assert.is(result, 42);
    assert.match(seen, new RegExp(`^${join(dataDir, 'work')}/deploy-d1-p${process.pid}-`));
    assert.not.ok(existsSync(seen));
    const failed = await workspaces
      .run('deploy-d2', async (dir) => {
        seen = dir;
        throw new Error('unpack failed');
      })
      .catch((err: Error) => err.message);
    assert.is(failed, 'unpack failed');
    assert.not.ok(existsSync(seen));
  },
);

test.run();
