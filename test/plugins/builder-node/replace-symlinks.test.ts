// What replaces node_modules' symbolic links after a build, on the host: copies and shims within a budget; links that
// multiply a copy (folders of links to folders) or loop are refused before anything large is written.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { StageError } from '../../../core/errors.js';
import { replaceSymlinks } from '../../../plugins/builder-node/replace-symlinks.js';

const budget = () => ({ bytes: 64 * 1024 * 1024, entries: 20_000 });
const project = () => {
  const root = mkdtempSync(join(tmpdir(), 'hoist-links-'));
  mkdirSync(join(root, 'node_modules'));
  return root;
};
const used = (dir: string) => Number(execFileSync('du', ['-sk', dir]).toString().split('\t')[0]);

test('links to a folder and a file become copies, a link to an executable a shim', async () => {
  const root = project();
  try {
    mkdirSync(join(root, 'lib'));
    writeFileSync(join(root, 'lib', 'a.js'), 'module.exports = 1;');
    writeFileSync(join(root, 'tool'), '#!/bin/sh\necho hi\n');
    chmodSync(join(root, 'tool'), 0o755);
    symlinkSync('../lib', join(root, 'node_modules', 'lib'));
    symlinkSync('../lib/a.js', join(root, 'node_modules', 'a.js'));
    symlinkSync('../tool', join(root, 'node_modules', 'tool'));
    assert.is(await replaceSymlinks(root, join(root, 'node_modules'), budget()), 3);
    assert.ok(lstatSync(join(root, 'node_modules', 'lib')).isDirectory());
    assert.is(readFileSync(join(root, 'node_modules', 'lib', 'a.js'), 'utf8'), 'module.exports = 1;');
    assert.ok(lstatSync(join(root, 'node_modules', 'a.js')).isFile());
    assert.match(readFileSync(join(root, 'node_modules', 'tool'), 'utf8'), /^#!\/bin\/sh\nexec /);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('folders of links to folders, which would multiply a copy, are refused before it is made', async () => {
  const root = project();
  try {
    // d0 … d4, each holding 8 links to the next; d4 one 64 KiB file: copying d0 whole would write 8^4 × 64 KiB.
    const depth = 4;
    for (let k = depth; k >= 0; k--) {
      const d = join(root, 'node_modules', `d${k}`);
      mkdirSync(d);
      if (k === depth) writeFileSync(join(d, 'file.bin'), Buffer.alloc(64 * 1024, 1));
      else for (let i = 0; i < 8; i++) symlinkSync(`../d${k + 1}`, join(d, `l${i}`));
    }
    const before = used(root);
    const err = await replaceSymlinks(root, join(root, 'node_modules'), {
      bytes: 16 * 1024 * 1024,
      entries: 20_000,
    }).catch((e: unknown) => e);
    assert.instance(err, StageError);
    assert.is((err as StageError).code, 'build_symlinks_too_large');
    assert.ok(used(root) - before < 20 * 1024, `wrote ${used(root) - before} KiB before refusing`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a link to a folder that holds a link back to it (a cycle) is refused', async () => {
  const root = project();
  try {
    mkdirSync(join(root, 'pkg'));
    symlinkSync('..', join(root, 'pkg', 'up'));
    symlinkSync('../pkg', join(root, 'node_modules', 'pkg'));
    const err = await replaceSymlinks(root, join(root, 'node_modules'), budget()).catch((e: unknown) => e);
    assert.instance(err, StageError);
    assert.is((err as StageError).code, 'build_symlinks_too_large');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a link to a FIFO, or to a folder holding one, fails with build_symlink_special, not a raw cp error', async () => {
  const root = project();
  try {
    execFileSync('mkfifo', [join(root, 'fifo')]);
    mkdirSync(join(root, 'pkg'));
    execFileSync('mkfifo', [join(root, 'pkg', 'pipe')]);
    for (const target of ['../fifo', '../pkg']) {
      const link = join(root, 'node_modules', 'link');
      rmSync(link, { force: true });
      symlinkSync(target, link);
      const err = await replaceSymlinks(root, join(root, 'node_modules'), budget()).catch((e: unknown) => e);
      assert.instance(err, StageError, String(err));
      assert.is((err as StageError).code, 'build_symlink_special');
      assert.match((err as StageError).message, 'not a file or a folder');
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test.run();
