import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import yauzl from 'yauzl';
import { listFolder, manifestOf, packFolder, zipWithin } from '../../../../adapters/cli/remote/archive.js';

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

test(
  'a symlink inside the folder to what the rules leave out (.git, an ignored file or folder, node_modules, what ' +
    'a folder reached through a symlink ignores where it is) is skipped with a warning: it cannot publish it',
  async () => {
    const { parent, root } = folder({
      '.gitignore': '.env\nsecrets/\ncontent/draft.md\n',
      '.env': 'STRIPE_SECRET_KEY=sk_live_1',
      '.git/config': '[remote "origin"]\n url = https://user:ghp_TOKEN@github.com/x/y',
      'secrets/prod.pem': 'PRIVATE KEY',
      'node_modules/dep/index.js': 'DEP-BODY',
      'content/post.md': 'post',
      'content/draft.md': 'DRAFT-BODY',
      'public/index.html': 'home',
    });
    symlinkSync('../.env', join(root, 'public/robots.txt'));
    symlinkSync('../.git/config', join(root, 'public/humans.txt'));
    symlinkSync('../.git', join(root, 'public/repo'));
    symlinkSync('../secrets/prod.pem', join(root, 'public/key.txt'));
    symlinkSync('../secrets', join(root, 'public/assets'));
    symlinkSync('../node_modules/dep/index.js', join(root, 'public/dep.js'));
    symlinkSync('../content', join(root, 'public/blog'));
    symlinkSync('../content/post.md', join(root, 'public/post.md'));
    try {
      const packed = await packFolder(root);
      const got = await entries(packed.zip);
      assert.equal(Object.keys(got).sort(), ['.gitignore', 'content/post.md', 'public/index.html', 'public/post.md']);
      for (const secret of ['sk_live_1', 'ghp_TOKEN', 'PRIVATE KEY', 'DRAFT-BODY', 'DEP-BODY'])
        assert.not.ok(
          Object.values(got).some((body) => body.includes(secret)),
          secret,
        );
      assert.equal(packed.warnings.sort(), [
        'public/assets: skipped, a symlink to secrets, which is left out',
        // content/ was packed first: the same folder is not packed twice.
        'public/blog: skipped, a symlink loop',
        'public/dep.js: skipped, a symlink to node_modules/dep/index.js, which is left out',
        'public/humans.txt: skipped, a symlink to .git/config, which is left out',
        'public/key.txt: skipped, a symlink to secrets/prod.pem, which is left out',
        'public/repo: skipped, a symlink to .git, which is left out',
        'public/robots.txt: skipped, a symlink to .env, which is left out',
      ]);
      // With --include-node-modules, node_modules is no longer left out, through a symlink either.
      assert.ok('public/dep.js' in (await entries((await packFolder(root, { includeNodeModules: true })).zip)));
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  },
);

test('what a folder reached through a symlink holds keeps the ignore rules of where it really is', async () => {
  const { parent, root } = folder({
    '.gitignore': 'src/content/draft.md\n',
    'src/.hoistignore': 'notes.txt\n',
    'src/content/post.md': 'post',
    'src/content/draft.md': 'draft',
    'src/content/notes.txt': 'notes',
  });
  // "blog" sorts before "src": the folder is packed through the symlink, under its name.
  symlinkSync('src/content', join(root, 'blog'));
  try {
    const { files } = listFolder(root);
    assert.equal(
      files.map((f) => f.name),
      ['.gitignore', 'blog/post.md', 'src/.hoistignore'],
    );
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
});

test('a symlink to a FIFO is skipped with a warning (reading it would block forever)', async () => {
  const { parent, root } = folder({ 'index.html': 'home' });
  execFileSync('mkfifo', [join(root, 'pipe')]);
  symlinkSync('pipe', join(root, 'data.json'));
  try {
    const { files, warnings } = listFolder(root);
    assert.equal(
      files.map((f) => f.name),
      ['index.html'],
    );
    assert.equal(warnings, ['data.json: skipped, a symlink to something neither a file nor a folder']);
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
});

test('a name with control characters is quoted in a warning: it cannot drive the terminal', () => {
  const { parent, root } = folder({ 'index.html': 'home' });
  symlinkSync('/etc/hostname', join(root, 'x\x1b]0;owned\x07\x9b2K\rall good'));
  try {
    const { warnings } = listFolder(root);
    assert.equal(warnings, ['"x\\u001b]0;owned\\u0007\\u009b2K\\rall good": skipped, a symlink to outside the folder']);
    assert.not.match(warnings[0], /[\x00-\x1f\x7f-\x9f]/);
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
});

test('manifestOf hashes a file in pieces; zipWithin stops as soon as the ZIP passes its limit', async () => {
  const big = randomBytes(3 << 20);
  const { parent, root } = folder({ 'big.bin': big.toString('latin1'), 'small.txt': 'small' });
  writeFileSync(join(root, 'big.bin'), big);
  try {
    const { files } = listFolder(root);
    assert.equal(await manifestOf(files), [
      { path: 'big.bin', sha256: createHash('sha256').update(big).digest('hex'), size: big.length },
      { path: 'small.txt', sha256: createHash('sha256').update('small').digest('hex'), size: 5 },
    ]);
    // Random bytes do not compress: the ZIP is past 1 MB long before the whole file is read.
    assert.is(await zipWithin(files, 1 << 20), null);
    // It stops there: a file listed after the limit is passed is never read (this one, a folder, could not be).
    mkdirSync(join(root, 'folder'));
    assert.is(await zipWithin([...files, { name: 'unreadable', path: join(root, 'folder') }], 1 << 20), null);
    // A file gone since it was listed is an error to report, not a crash.
    rmSync(join(root, 'folder'), { recursive: true });
    mkdirSync(join(root, 'folder'));
    await zipWithin([{ name: 'unreadable', path: join(root, 'folder') }, ...files], 10 << 20).then(
      () => assert.unreachable('a folder cannot be read as a file'),
      (err: NodeJS.ErrnoException) => assert.is(err.code, 'EISDIR'),
    );
    const whole = await zipWithin(files, 10 << 20);
    assert.ok(whole && whole.length > big.length);
    assert.equal(Object.keys(await entries(whole!)).sort(), ['big.bin', 'small.txt']);
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
});

test.run();
