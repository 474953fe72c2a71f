import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ArchiveError } from '../../../plugins/archive-zip/archive-error.js';
import { inspectZip } from '../../../plugins/archive-zip/inspect-zip.js';
import { readZip } from '../../../plugins/archive-zip/read-zip.js';
import { rawZip, type RawEntry } from '../../helpers/raw-zip.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-read-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

function zipFile(entries: RawEntry[]): string {
  const path = join(dir, `zip-${++n}`);
  writeFileSync(path, rawZip(entries));
  return path;
}

/** Asserts the promise rejects with an ArchiveError of this code and entry. */
async function refuses(p: Promise<unknown>, code: string, entry: string | null) {
  try {
    await p;
  } catch (err) {
    assert.instance(err, ArchiveError);
    assert.is((err as ArchiveError).details.code, code, (err as Error).message);
    assert.is((err as ArchiveError).details.entry, entry);
    return;
  }
  assert.unreachable(`expected ${code}`);
}

// 2 MB: past the size read whole into memory, so its bytes stream; the ZIP itself stays small enough to hold in memory.
const big = Buffer.alloc(2_000_000, 'a');

test('reads single files of the effective tree, relative to its root', async () => {
  const zip = zipFile([
    { name: 'site/index.html', data: '<h1>hi</h1>', method: 8 },
    { name: 'site/docs/a.txt', data: 'a' },
    { name: 'site/big.txt', data: big, method: 8 },
  ]);
  const reader = await readZip(zip, await inspectZip(zip));
  try {
    assert.is((await reader.readFile('index.html', 1000))?.toString(), '<h1>hi</h1>');
    assert.is((await reader.readFile('./docs/a.txt', 1000))?.toString(), 'a');
    assert.is((await reader.readFile('docs/../index.html', 1000))?.toString(), '<h1>hi</h1>');
    assert.ok((await reader.readFile('big.txt', 3_000_000))?.equals(big));
    assert.is(await reader.readFile('big.txt', 1_000_000), null, 'larger than maxBytes');
    assert.is(await reader.readFile('docs', 1000), null, 'a folder');
    assert.is(await reader.readFile('missing.txt', 1000), null);
    assert.is(await reader.readFile('site/index.html', 1000), null, 'the unwrapped folder is not part of the path');
    assert.is(await reader.readFile('../site/index.html', 1000), null);
    assert.is(await reader.readFile('/index.html', 1000), null);
  } finally {
    reader.close();
  }
});

test('a file inflating past its declared size fails at open, small or large', async () => {
  const small = zipFile([
    { name: 'index.html', data: 'ok' },
    { name: 'bomb.bin', data: Buffer.alloc(500_000), method: 8, size: 10 },
  ]);
  await refuses(readZip(small, await inspectZip(small)), 'archive_too_large_uncompressed', 'bomb.bin');
  const large = zipFile([
    { name: 'index.html', data: 'ok' },
    { name: 'bomb.bin', data: Buffer.alloc(3_000_000), method: 8, size: 1_500_000 },
  ]);
  await refuses(readZip(large, await inspectZip(large)), 'archive_too_large_uncompressed', 'bomb.bin');
});

test('a wrong checksum or a short entry fails at open, small or large', async () => {
  const crc = zipFile([{ name: 'index.html', data: 'hello', crc: 1234 }]);
  await refuses(readZip(crc, await inspectZip(crc)), 'archive_invalid', 'index.html');
  const short = zipFile([{ name: 'index.html', data: 'abc', method: 8, size: 50 }]);
  await refuses(readZip(short, await inspectZip(short)), 'archive_invalid', 'index.html');
  const largeCrc = zipFile([{ name: 'big.bin', data: big, method: 8, crc: 1234 }]);
  await refuses(readZip(largeCrc, await inspectZip(largeCrc)), 'archive_invalid', 'big.bin');
});

test('an archive on disk past the in-memory size reads the same way', async () => {
  const random = randomBytes(9_000_000);
  const zip = zipFile([
    { name: 'index.html', data: 'disk' },
    { name: 'random.bin', data: random },
  ]);
  const reader = await readZip(zip, await inspectZip(zip));
  try {
    assert.is((await reader.readFile('index.html', 1000))?.toString(), 'disk');
    assert.ok((await reader.readFile('random.bin', 10_000_000))?.equals(random));
  } finally {
    reader.close();
  }
});

test('an archive changed since inspection is archive_invalid', async () => {
  const zip = zipFile([{ name: 'a.txt', data: 'a' }]);
  const manifest = await inspectZip(zip);
  writeFileSync(zip, rawZip([{ name: 'b.txt', data: 'a' }]));
  await refuses(readZip(zip, manifest), 'archive_invalid', 'a.txt');
});

test('an aborted read rejects with the reason', async () => {
  const zip = zipFile([{ name: 'index.html', data: 'x' }]);
  const ac = new AbortController();
  ac.abort(new Error('canceled by user'));
  try {
    await readZip(zip, await inspectZip(zip), { signal: ac.signal });
    assert.unreachable('expected a rejection');
  } catch (err) {
    assert.is((err as Error).message, 'canceled by user');
  }
});

test.run();
