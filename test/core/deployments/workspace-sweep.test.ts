import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DataDirWorkspaces, sweepWorkspaces, withWorkspace } from '../../../core/deployments/workspace.js';
import { makeDeepTree } from '../../helpers/deep-tree.js';
import { runUnprivileged, UNPRIVILEGED_UID } from '../../helpers/unprivileged.js';

const dataDir = mkdtempSync(join(tmpdir(), 'hoist-sweep-'));
// rm(1): trees deeper than PATH_MAX are made below.
test.after(() => void execFileSync('sh', ['-c', 'chmod -R u+rwx "$0"; rm -rf "$0"', dataDir]));
/** Warnings a cleanup logged. */
const warned: string[] = [];
const log = { warn: (_obj: object | string, msg?: string) => void warned.push(String(msg)) };

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

test("a build's tree deeper than PATH_MAX is removed with its workspace; the build's own error stands", async () => {
  let seen = '';
  const failed = await withWorkspace(
    dataDir,
    'build-deep',
    async (dir) => {
      seen = await dir();
      makeDeepTree(seen, { depth: 1400, bytes: 1000 });
      throw new Error('the build failed');
    },
    log,
  ).catch((err: Error) => err.message);
  assert.is(failed, 'the build failed');
  assert.not.ok(existsSync(seen), 'removed');
});

test('the sweep at start removes a tree deeper than PATH_MAX a crashed process left', async () => {
  const dead = spawnSync('true').pid!;
  const left = join(dataDir, 'work', `build-op5-p${dead}-DeEp00`);
  mkdirSync(left, { recursive: true });
  makeDeepTree(left, { depth: 1400, bytes: 1000 });
  assert.is(await sweepWorkspaces(dataDir, log), 1);
  assert.not.ok(existsSync(left));
});

test(
  'unprivileged: a folder a build made read-only is removed; a workspace that cannot be removed is logged, ' +
    "never replaces the build's result, and the sweep goes on",
  async () => {
    const data = mkdtempSync(join(tmpdir(), 'hoist-sweep-unprivileged-'));
    const dead = spawnSync('true').pid!;
    mkdirSync(join(data, 'work', `build-op6-p${dead}-ReAd00`, 'src', 'ro'), { recursive: true });
    writeFileSync(join(data, 'work', `build-op6-p${dead}-ReAd00`, 'src', 'ro', 'big'), 'x'.repeat(10_000));
    chmodSync(join(data, 'work', `build-op6-p${dead}-ReAd00`, 'src', 'ro'), 0o500);
    const root = process.getuid?.() === 0;
    if (root) {
      execFileSync('chown', ['-R', `${UNPRIVILEGED_UID}:${UNPRIVILEGED_UID}`, data]);
      // Something the unprivileged Hoist cannot remove (another user's folder), which its build moves in.
      mkdirSync(join(data, 'stuck', 'inner'), { recursive: true });
      writeFileSync(join(data, 'stuck', 'inner', 'file'), 'x');
      chmodSync(join(data, 'stuck'), 0o777);
      chownSync(data, UNPRIVILEGED_UID, UNPRIVILEGED_UID);
    }
    try {
      const out = await runUnprivileged(
        `
        import { chmodSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
        import { join } from 'node:path';
        import { sweepWorkspaces, withWorkspace } from 'REPO/core/deployments/workspace.js';
        const data = process.env.DATA;
        const warned = [];
        const log = { warn: (_o, msg) => warned.push(msg) };
        let made = '';
        const kept = await withWorkspace(data, 'build-ro', async (dir) => {
          made = await dir();
          mkdirSync(join(made, 'src', 'ro'), { recursive: true });
          writeFileSync(join(made, 'src', 'ro', 'big'), 'x');
          chmodSync(join(made, 'src', 'ro'), 0o500);
          return 'built';
        }, log);
        const result = { kept, removed: !(await import('node:fs')).existsSync(made) };
        const failed = await withWorkspace(data, 'build-stuck', async (dir) => {
          if (process.env.STUCK) renameSync(join(data, 'stuck'), join(await dir(), 'stuck'));
          throw new Error('the build failed');
        }, log).catch((err) => err.message);
        const swept = await sweepWorkspaces(data, log);
        console.log(JSON.stringify({ ...result, failed, swept, warned }));
      `,
        { DATA: data, ...(root && { STUCK: '1' }) },
      );
      const r = JSON.parse(out);
      assert.is(r.kept, 'built');
      assert.ok(r.removed, 'the read-only folder was removed');
      assert.is(r.failed, 'the build failed', 'the cleanup error did not replace it');
      assert.ok(!existsSync(join(data, 'work', `build-op6-p${dead}-ReAd00`)), 'the sweep removed the read-only tree');
      if (root) {
        assert.is(r.swept, 1, 'the one it could remove');
        assert.equal(r.warned, [
          'a workspace was not removed; the next start sweeps it',
          'a workspace left behind was not removed; the next sweep tries again',
        ]);
      }
    } finally {
      execFileSync('rm', ['-rf', data]);
    }
  },
);

test.run();
