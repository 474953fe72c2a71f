import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import tar from 'tar-stream';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { packDirectories, packDirectory } from '../../../../plugins/shared/docker/pack-directory.js';

const root = mkdtempSync(join(tmpdir(), 'hoist-packdirs-'));
let n = 0;
const fresh = () => {
  const d = join(root, String(++n));
  mkdirSync(d, { mode: 0o700 });
  return d;
};

/** Every entry of `stream`: name, owner and permission bits. */
async function entries(stream: Readable): Promise<[string, number, number, string][]> {
  const out: [string, number, number, string][] = [];
  const extract = tar.extract();
  extract.on('entry', (h, s, next) => {
    out.push([h.name, h.uid ?? -1, h.mode ?? -1, h.type ?? '']);
    s.on('end', () => next());
    s.resume();
  });
  await new Promise((r) => stream.pipe(extract).on('finish', r));
  return out;
}

test('packDirectory: a folder, its links kept, owned by the tenant user', async () => {
  const src = fresh();
  mkdirSync(join(src, 'sub'));
  writeFileSync(join(src, 'sub/f.txt'), 'F');
  symlinkSync('sub/f.txt', join(src, 'link'));
  const { tar: stream, done } = packDirectory(src, 'app');
  const [list] = await Promise.all([entries(stream), done]);
  assert.equal(
    list.map(([name, uid, , type]) => [name, uid, type]),
    [
      ['app', 10001, 'directory'],
      ['app/link', 10001, 'symlink'],
      ['app/sub', 10001, 'directory'],
      ['app/sub/f.txt', 10001, 'file'],
    ],
  );
});

test('several folders go into one tar, each under its prefix, owned as asked and readable by all', async () => {
  const app = fresh();
  mkdirSync(join(app, 'sub'), { mode: 0o700 });
  writeFileSync(join(app, 'sub/private.txt'), 'P', { mode: 0o600 });
  writeFileSync(join(app, 'run.sh'), 'R', { mode: 0o750 });
  const runtime = fresh();
  writeFileSync(join(runtime, 'entry.cjs'), 'E', { mode: 0o600 });
  const { tar: stream, done } = packDirectories(
    [
      { dir: app, prefix: 'app' },
      { dir: runtime, prefix: 'hoist' },
    ],
    { uid: 0, gid: 0, worldReadable: true },
  );
  const [list] = await Promise.all([entries(stream), done]);
  assert.equal(list, [
    ['app', 0, 0o755, 'directory'],
    ['app/run.sh', 0, 0o754, 'file'],
    ['app/sub', 0, 0o755, 'directory'],
    ['app/sub/private.txt', 0, 0o644, 'file'],
    ['hoist', 0, 0o755, 'directory'],
    ['hoist/entry.cjs', 0, 0o644, 'file'],
  ]);
});

test('without worldReadable only the owner is given read and write', async () => {
  const dir = fresh();
  writeFileSync(join(dir, 'f'), 'F', { mode: 0o400 });
  const { tar: stream, done } = packDirectories([{ dir, prefix: 'app' }], { uid: 10001, gid: 10001 });
  const [list] = await Promise.all([entries(stream), done]);
  assert.equal(list, [
    ['app', 10001, 0o700, 'directory'],
    ['app/f', 10001, 0o600, 'file'],
  ]);
});

test('a later folder that cannot be read ends the tar and rejects done', async () => {
  const dir = fresh();
  writeFileSync(join(dir, 'f'), 'F');
  const { tar: stream, done } = packDirectories(
    [
      { dir, prefix: 'app' },
      { dir: join(root, 'missing'), prefix: 'hoist' },
    ],
    { uid: 0, gid: 0 },
  );
  stream.resume();
  const err = await done.then(
    () => null,
    (e: Error) => e,
  );
  assert.match(String(err), /ENOENT/);
  await new Promise((r) => stream.on('end', r));
});

test.after(() => rmSync(root, { recursive: true, force: true }));
test.run();
