import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ArchiveError } from '../../../adapters/archive/archive-error.js';
import { extractZip } from '../../../adapters/archive/extract-zip.js';
import { inspectZip } from '../../../adapters/archive/inspect-zip.js';
import { packDirectory } from '../../../adapters/archive/pack-directory.js';
import { repackZip } from '../../../adapters/archive/repack-zip.js';
import { rawZip, unixAttrs, type RawEntry } from '../../helpers/raw-zip.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-repack-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const fresh = (what: string) => join(dir, `${what}-${++n}`);

function zipFile(entries: RawEntry[]): string {
  const path = fresh('zip');
  writeFileSync(path, rawZip(entries));
  return path;
}

/** The artifact packDirectory makes of `sub` of the extracted archive: what repackZip must give byte for byte. */
async function extractedAndPacked(zip: string, sub: string): Promise<Buffer> {
  const tree = fresh('tree');
  await extractZip(zip, await inspectZip(zip), tree);
  const out = fresh('packed.zip');
  await packDirectory(join(tree, sub), out);
  return readFileSync(out);
}

const site: RawEntry[] = [
  { name: 'proj/index.html', data: '<h1>root</h1>', method: 8 },
  { name: 'proj/public/index.html', data: '<h1>public</h1>', method: 8 },
  { name: 'proj/public/img/logo.png', data: randomBytes(3000) },
  { name: 'proj/public/big.js', data: 'x'.repeat(1_500_000), method: 8 },
  { name: 'proj/public/run.sh', data: '#!/bin/sh\n', attrs: unixAttrs(0o100755) },
  { name: '__MACOSX/proj/._index.html', data: 'junk' },
];

test('the whole tree or one folder: the same bytes as extracting and packing it', async () => {
  const zip = zipFile(site);
  const manifest = await inspectZip(zip);
  for (const sub of ['.', 'public']) {
    const out = fresh('repacked.zip');
    await repackZip(zip, manifest, sub, out);
    assert.ok(readFileSync(out).equals(await extractedAndPacked(zip, sub)), sub);
  }
  const out = fresh('repacked.zip');
  await repackZip(zip, manifest, 'public', out);
  assert.equal((await inspectZip(out)).files.map((f) => [f.path, f.mode]), [
    ['big.js', 0o644],
    ['img/logo.png', 0o644],
    ['index.html', 0o644],
    ['run.sh', 0o755],
  ]);
});

test('a tree too large to hold in memory gives the same bytes too, and leaves no folder behind', async () => {
  const zip = zipFile([{ name: 'index.html', data: 'big' }, { name: 'blob.bin', data: randomBytes(9_000_000) }]);
  const work = mkdtempSync(join(dir, 'work-'));
  const out = join(work, 'artifact.zip');
  await repackZip(zip, await inspectZip(zip), '.', out);
  assert.ok(readFileSync(out).equals(await extractedAndPacked(zip, '.')));
  assert.equal(readdirSync(work), ['artifact.zip']);
});

test('every file is checked, inside the folder or not; nothing is written on a refusal', async () => {
  for (const [entries, code, entry] of [
    [[{ name: 'public/index.html', data: 'ok' }, { name: 'notes.txt', data: 'hello', crc: 1234 }], 'archive_invalid', 'notes.txt'],
    [[{ name: 'public/index.html', data: 'ok' }, { name: 'public/bomb.bin', data: Buffer.alloc(400_000), method: 8, size: 10 }], 'archive_too_large_uncompressed', 'public/bomb.bin'],
  ] as const) {
    const zip = zipFile([...entries] as RawEntry[]);
    const out = fresh('out.zip');
    try {
      await repackZip(zip, await inspectZip(zip), 'public', out);
      assert.unreachable(`expected ${code}`);
    } catch (err) {
      assert.instance(err, ArchiveError);
      assert.equal((err as ArchiveError).details, { code, entry });
    }
    assert.not.ok(existsSync(out));
  }
});

test('an aborted repack rejects with the reason', async () => {
  const zip = zipFile(site);
  const ac = new AbortController();
  ac.abort(new Error('canceled by user'));
  try {
    await repackZip(zip, await inspectZip(zip), '.', fresh('out.zip'), { signal: ac.signal });
    assert.unreachable('expected a rejection');
  } catch (err) {
    assert.is((err as Error).message, 'canceled by user');
  }
});

test.run();
