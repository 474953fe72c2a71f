import { execFileSync } from 'node:child_process';
import {
  existsSync,
  utimesSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BuildCaches, ENTRY_BYTES } from '../../../core/deployments/build-cache.js';
import { makeDeepTree } from '../../helpers/deep-tree.js';

const root = mkdtempSync(join(tmpdir(), 'hoist-build-cache-'));
// rm(1): trees deeper than PATH_MAX are made below.
test.after(() => void execFileSync('rm', ['-rf', root]));
const dataDir = join(root, 'data');
// Each entry counts for at least a block (ENTRY_BYTES): 16 of them at most.
const LIMIT = 16 * ENTRY_BYTES;
const caches = new BuildCaches(dataDir, LIMIT);
let n = 0;
/** A path in a fresh build folder, as the Build stage gives take(). */
const buildDir = () => {
  const dir = join(dataDir, 'work', `build-${++n}`);
  mkdirSync(dir, { recursive: true });
  return join(dir, 'cache');
};

test("a build takes the account's cache and gives it back; the next one finds what it kept", async () => {
  const first = buildDir();
  assert.is(await caches.take('acct-1', first), false, 'none yet: an empty folder');
  assert.equal(readdirSync(first), []);
  mkdirSync(join(first, 'npm'));
  writeFileSync(join(first, 'npm', 'blob'), 'x'.repeat(100));
  assert.equal(await caches.giveBack('acct-1', first), { kept: true, bytes: 2 * ENTRY_BYTES }, 'a folder and a file');
  assert.not.ok(existsSync(first));

  const second = buildDir();
  assert.is(await caches.take('acct-1', second), true);
  assert.is(readFileSync(join(second, 'npm', 'blob'), 'utf8'), 'x'.repeat(100));
  const other = buildDir();
  assert.is(await caches.take('acct-2', other), false, "another account never gets this one's");
  assert.equal(readdirSync(other), []);
});

test('a build of the account that starts meanwhile gets an empty one; the first given back stays', async () => {
  const a = buildDir();
  const b = buildDir();
  await caches.take('acct-3', a);
  writeFileSync(join(a, 'kept'), 'a');
  await caches.giveBack('acct-3', a);
  assert.is(await caches.take('acct-3', a), true);
  assert.is(await caches.take('acct-3', b), false);
  writeFileSync(join(b, 'other'), 'b');
  assert.equal(await caches.giveBack('acct-3', b), { kept: true, bytes: ENTRY_BYTES });
  assert.equal(await caches.giveBack('acct-3', a), { kept: false, why: 'newer_kept', bytes: ENTRY_BYTES });
  assert.not.ok(existsSync(a), 'removed');
  const c = buildDir();
  await caches.take('acct-3', c);
  assert.equal(readdirSync(c), ['other']);
});

test('a cache over the limit, or holding a link or a FIFO, is removed, not kept', async () => {
  const cases: [string, (dir: string) => void, string][] = [
    ['too large', (dir) => writeFileSync(join(dir, 'big'), Buffer.alloc(LIMIT + 1)), 'too_large'],
    [
      'too large in all',
      (dir) => {
        mkdirSync(join(dir, 'a/b'), { recursive: true });
        for (let i = 0; i < 3; i++) writeFileSync(join(dir, 'a/b', String(i)), Buffer.alloc(LIMIT / 3));
      },
      'too_large',
    ],
    ['a link', (dir) => symlinkSync('/etc/passwd', join(dir, 'passwd')), 'not_plain_files'],
    ['a link to a folder', (dir) => symlinkSync(dataDir, join(dir, 'data')), 'not_plain_files'],
    ['a FIFO', (dir) => execFileSync('mkfifo', [join(dir, 'fifo')]), 'not_plain_files'],
    [
      // An inode and a block each, though their bytes are 0.
      'empty folders and files',
      (dir) => {
        for (let i = 0; i < 10; i++) mkdirSync(join(dir, `d${i}`));
        for (let i = 0; i < 10; i++) writeFileSync(join(dir, `e${i}`), '');
      },
      'too_large',
    ],
    // Node.js cannot remove a path that long with fs.rm (ENAMETOOLONG); 1,400 folders are over the limit too.
    ['a tree deeper than PATH_MAX', (dir) => makeDeepTree(dir, { depth: 1400 }), 'too_large'],
  ];
  for (const [name, fill, why] of cases) {
    const dir = buildDir();
    await caches.take(`acct-${name.replace(/\W/g, '-')}`, dir);
    fill(dir);
    const r = await caches.giveBack(`acct-${name.replace(/\W/g, '-')}`, dir);
    assert.is(r.kept, false, name);
    assert.is(!r.kept && r.why, why, name);
    assert.not.ok(existsSync(dir), `${name}: removed`);
    assert.not.ok(existsSync(join(dataDir, 'build-cache', `acct-${name.replace(/\W/g, '-')}`)), `${name}: not kept`);
  }
  assert.ok(existsSync('/etc/passwd'), 'a link is removed, not what it points to');
  assert.ok(existsSync(join(dataDir, 'work')));
});

test('the sweep removes an old cache deeper than PATH_MAX', async () => {
  const dir = buildDir();
  await caches.take('acct-deep', dir);
  assert.equal(await caches.giveBack('acct-deep', dir), { kept: true, bytes: 0 });
  const kept = join(dataDir, 'build-cache', 'acct-deep');
  makeDeepTree(kept, { depth: 1400 }); // as if it was kept deep, or Hoist's rules changed since
  utimesSync(kept, new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));
  assert.ok((await caches.sweep(60_000)) >= 1);
  assert.not.ok(existsSync(kept));
});

test('clear_cache removes a cache deeper than PATH_MAX', async () => {
  const kept = join(dataDir, 'build-cache', 'acct-deep-2');
  mkdirSync(kept, { recursive: true });
  makeDeepTree(kept, { depth: 1400 });
  await caches.clear('acct-deep-2');
  assert.not.ok(existsSync(kept));
});

test('an account id that is not one names no folder', async () => {
  for (const id of ['../escape', 'a/b', '', '.']) {
    const err = await caches.take(id, buildDir()).then(
      () => null,
      (e: Error) => e,
    );
    assert.match(String(err?.message), 'not an account id', id);
  }
  assert.not.ok(existsSync(join(dataDir, 'escape')));
});

test.run();
