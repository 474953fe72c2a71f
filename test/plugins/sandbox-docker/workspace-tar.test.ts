import { lstatSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import tar from 'tar-stream';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { unpackDirectory } from '../../../plugins/sandbox-docker/workspace-tar.js';

const dirs: string[] = [];
const fresh = () => {
  const d = mkdtempSync(join(tmpdir(), 'hoist-wtar-'));
  dirs.push(d);
  return d;
};

/** A tar of `entries`, each under `app/` as the engine answers for /app. */
function tarOf(entries: (tar.Headers & { body?: string })[]): Readable {
  const pack = tar.pack();
  pack.entry({ name: 'app/', type: 'directory', mode: 0o755 });
  for (const { body, ...h } of entries) pack.entry({ mode: 0o644, ...h, name: `app/${h.name}` }, body ?? '');
  pack.finalize();
  return pack;
}

async function unpack(entries: (tar.Headers & { body?: string })[], maxBytes = 1 << 20) {
  const dest = fresh();
  const refused: string[] = [];
  const result = await unpackDirectory(tarOf(entries), dest, {
    maxBytes,
    refused: (path, why) => refused.push(`${path}: ${why}`),
  });
  return { dest, refused, result };
}

test(
  'files, folders, hard links and links inside come back; modes lose set-id bits; ' +
    'absolute links into the folder become relative',
  async () => {
    const { dest, refused } = await unpack([
      { name: 'src/', type: 'directory', mode: 0o755 },
      { name: 'src/a.txt', body: 'A', mode: 0o4755 },
      { name: 'src/b.txt', type: 'link', linkname: 'app/src/a.txt' },
      { name: 'rel', type: 'symlink', linkname: 'src/a.txt' },
      { name: 'abs', type: 'symlink', linkname: '/app/src/a.txt' },
      { name: 'deep/x/y.txt', body: 'Y' },
    ]);
    assert.equal(refused, []);
    assert.is(readFileSync(join(dest, 'src/a.txt'), 'utf8'), 'A');
    assert.is(lstatSync(join(dest, 'src/a.txt')).mode & 0o7777, 0o755);
    assert.is(lstatSync(join(dest, 'src/b.txt')).ino, lstatSync(join(dest, 'src/a.txt')).ino);
    assert.is(readlinkSync(join(dest, 'rel')), 'src/a.txt');
    assert.is(readlinkSync(join(dest, 'abs')), 'src/a.txt');
    assert.is(readFileSync(join(dest, 'deep/x/y.txt'), 'utf8'), 'Y');
  },
);

test(
  'devices, FIFOs, links outside, hard links to outside and paths with .. are ' +
    'refused; nothing is written through a link',
  async () => {
    const { dest, refused } = await unpack([
      { name: 'null', type: 'character-device', devmajor: 1, devminor: 3 },
      { name: 'disk', type: 'block-device', devmajor: 8, devminor: 0 },
      { name: 'pipe', type: 'fifo' },
      { name: 'passwd', type: 'symlink', linkname: '/etc/passwd' },
      { name: 'up', type: 'symlink', linkname: '../..' },
      { name: 'hard', type: 'link', linkname: '/etc/shadow' },
      { name: '../escape.txt', body: 'no' },
      { name: 'here', type: 'symlink', linkname: '.' },
      { name: 'here/through.txt', body: 'no' },
      // Each link is inside on paper; together they lead out (here -> ., out -> here/..).
      { name: 'out', type: 'symlink', linkname: 'here/..' },
    ]);
    assert.equal(readdirSync(dest).sort(), ['here']);
    const names = refused.map((r) => r.split(':')[0]);
    for (const n of ['null', 'disk', 'pipe', 'passwd', 'up', 'hard', 'here/through.txt', 'out'])
      assert.ok(names.includes(n), `${n} refused: ${refused.join('\n')}`);
    assert.ok(
      refused.some((r) => r.includes('escape.txt')),
      refused.join('\n'),
    );
  },
);

test('unpacking stops once file contents pass the limit', async () => {
  const { result, dest } = await unpack(
    [
      { name: 'a', body: 'x'.repeat(600) },
      { name: 'b', body: 'x'.repeat(600) },
    ],
    1000,
  );
  assert.is(result.overLimit, true);
  assert.equal(readdirSync(dest), ['a']);
});

test.after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
test.run();
