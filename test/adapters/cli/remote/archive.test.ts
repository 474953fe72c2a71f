import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import yauzl from 'yauzl';
import { packFolder } from '../../../../adapters/cli/remote/archive.js';

/** A folder holding `files` (path → content), under a fresh parent; returns both. */
function folder(files: Record<string, string>) {
  const parent = mkdtempSync(join(tmpdir(), 'hoist-pack-'));
  const root = join(parent, 'site');
  mkdirSync(root);
  for (const [name, body] of Object.entries(files)) {
    mkdirSync(dirname(join(root, name)), { recursive: true });
    writeFileSync(join(root, name), body);
  }
  return { parent, root };
}

/** The entry names of a ZIP and their contents, read back with yauzl. */
function entries(zip: Buffer): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const out: Record<string, string> = {};
    yauzl.fromBuffer(zip, { lazyEntries: true }, (err, z) => {
      if (err) return reject(err);
      z.on('entry', (e) =>
        z.openReadStream(e, (err2, s) => {
          if (err2) return reject(err2);
          let body = '';
          s.on('data', (c) => (body += c)).on('end', () => ((out[e.fileName] = body), z.readEntry()));
        }),
      );
      z.on('end', () => resolve(out)).on('error', reject);
      z.readEntry();
    });
  });
}

test('.gitignore and .hoistignore (nested ones too) are honoured; .git and node_modules never go in', async () => {
  const { parent, root } = folder({
    'index.html': 'home',
    '.gitignore': 'dist/\n*.log\n!keep.log\n',
    '.hoistignore': 'secret.txt\n',
    'secret.txt': 'no',
    'debug.log': 'no',
    'keep.log': 'yes',
    'dist/out.js': 'no',
    '.git/config': 'no',
    'node_modules/dep/index.js': 'no',
    'lib/node_modules/x.js': 'no',
    'lib/a.js': 'a',
    'lib/.gitignore': 'local.js\n',
    'lib/local.js': 'no',
    'docs/local.js': 'yes',
  });
  try {
    const packed = await packFolder(root);
    const got = await entries(packed.zip);
    assert.equal(Object.keys(got).sort(), [
      '.gitignore',
      '.hoistignore',
      'docs/local.js',
      'index.html',
      'keep.log',
      'lib/.gitignore',
      'lib/a.js',
    ]);
    assert.equal(
      packed.files,
      Object.keys(got)
        .sort((a, b) => (a < b ? -1 : 1))
        .sort(),
    );
    assert.is(got['index.html'], 'home');
    assert.equal(packed.warnings, []);
    const withModules = await entries((await packFolder(root, { includeNodeModules: true })).zip);
    assert.ok('node_modules/dep/index.js' in withModules && 'lib/node_modules/x.js' in withModules);
    assert.not.ok('.git/config' in withModules);
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
});

test(
  'symlinks: one pointing out of the folder is skipped with a warning; one inside ' +
    'goes in as the file it points to',
  async () => {
    const { parent, root } = folder({ 'index.html': 'home', 'real/data.txt': 'inside' });
    writeFileSync(join(parent, 'outside.txt'), 'outside');
    symlinkSync(join(parent, 'outside.txt'), join(root, 'out.txt'));
    symlinkSync(parent, join(root, 'up'));
    symlinkSync(join(root, 'real', 'data.txt'), join(root, 'in.txt'));
    symlinkSync(join(root, 'nowhere'), join(root, 'dangling'));
    try {
      const packed = await packFolder(root);
      const got = await entries(packed.zip);
      assert.equal(Object.keys(got).sort(), ['in.txt', 'index.html', 'real/data.txt']);
      assert.is(got['in.txt'], 'inside');
      assert.not.ok(Object.values(got).includes('outside'));
      assert.equal(packed.warnings.sort(), [
        'dangling: skipped, a symlink to outside the folder',
        'out.txt: skipped, a symlink to outside the folder',
        'up: skipped, a symlink to outside the folder',
      ]);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  },
);

test.run();
