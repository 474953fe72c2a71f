import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateRawSync, gunzipSync } from 'node:zlib';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { StageError } from '../../../core/errors.js';
import { ZipArchive } from '../../../plugins/archive-zip/zip-archive.js';
import type { ArchiveContent } from '../../../core/ports/archive.js';
import { rawZip, unixAttrs, type RawEntry } from '../../helpers/raw-zip.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-each-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
const archive = new ZipArchive();
let n = 0;

function zipFile(entries: RawEntry[]): string {
  const path = join(dir, `zip-${++n}`);
  writeFileSync(path, rawZip(entries));
  return path;
}

/** What `each` hands over, each file's bytes read whole. */
async function collect(zip: string): Promise<{ path: string; size: number; executable: boolean; text: string }[]> {
  const seen: { path: string; size: number; executable: boolean; text: string }[] = [];
  await archive.each(zip, await archive.inspect(zip, {}), async (file: ArchiveContent) => {
    let bytes = file.data;
    if (!bytes) {
      const chunks: Buffer[] = [];
      for await (const chunk of file.stream!) chunks.push(chunk as Buffer);
      bytes = Buffer.concat(chunks);
    }
    seen.push({ path: file.path, size: file.size, executable: file.executable, text: bytes.toString().slice(0, 20) });
  });
  return seen;
}

// 2 MB: past what is handed over whole, so it comes as a stream.
const big = Buffer.alloc(2_000_000, 'a');

test('hands over every file of the effective tree: small ones whole, a large one as a stream', async () => {
  const zip = zipFile([
    { name: 'site/index.html', data: '<h1>hi</h1>', method: 8 },
    { name: 'site/run.sh', data: '#!/bin/sh', attrs: unixAttrs(0o100755) },
    { name: 'site/big.bin', data: big, method: 8 },
  ]);
  assert.equal(await collect(zip), [
    { path: 'index.html', size: 11, executable: false, text: '<h1>hi</h1>' },
    { path: 'run.sh', size: 9, executable: true, text: '#!/bin/sh' },
    { path: 'big.bin', size: big.length, executable: false, text: 'a'.repeat(20) },
  ]);
});

test('a file whose bytes lie fails with archive_invalid naming it, whole or streamed', async () => {
  for (const data of ['<h1>hi</h1>', big]) {
    const zip = zipFile([
      { name: 'index.html', data: 'ok' },
      { name: 'liar.js', data, crc: 1, method: 8 },
    ]);
    const err = await collect(zip).then(
      () => null,
      (e: unknown) => e,
    );
    assert.instance(err, StageError);
    assert.is((err as StageError).code, 'archive_invalid');
    assert.match((err as StageError).message, 'liar.js');
  }
});

test('a deflated file gets a gzip of its own stream; a stored one, or one with more after it, none', async () => {
  const text = Buffer.from('<p>compressible</p>'.repeat(200));
  const deflated = deflateRawSync(text, { level: 1 });
  const zip = zipFile([
    { name: 'deflated.html', data: text, stored: deflated, method: 8 },
    { name: 'stored.html', data: text },
    {
      name: 'trailing.html',
      data: text,
      stored: Buffer.concat([deflated, Buffer.from('junk after the end')]),
      method: 8,
    },
  ]);
  const seen: Record<string, { data: string; gzip?: Buffer }> = {};
  await archive.each(zip, await archive.inspect(zip, {}), async (file) => {
    seen[file.path] = { data: file.data!.toString(), gzip: file.gzip?.() };
  });
  for (const path of ['deflated.html', 'stored.html', 'trailing.html'])
    assert.is(seen[path]!.data, text.toString(), `${path} is read as it is`);
  const gzip = seen['deflated.html']!.gzip!;
  assert.ok(gzip.subarray(10, 10 + deflated.length).equals(deflated), 'the stored stream, not compressed again');
  assert.is(gzip.length, deflated.length + 18, 'a header of 10 bytes and a trailer of 8');
  assert.ok(gunzipSync(gzip).equals(text), 'it decodes to the file');
  assert.is(seen['stored.html']!.gzip, undefined);
  assert.is(seen['trailing.html']!.gzip, undefined);
});

test("what the caller's function throws comes back as it was thrown", async () => {
  const zip = zipFile([{ name: 'index.html', data: 'ok' }]);
  const mine = new Error('disk full');
  const err = await archive
    .each(zip, await archive.inspect(zip, {}), async () => Promise.reject(mine))
    .then(
      () => null,
      (e: unknown) => e,
    );
  assert.is(err, mine);
});

test('an abort rejects with the signal’s reason', async () => {
  const zip = zipFile([{ name: 'index.html', data: 'ok' }]);
  const abort = new AbortController();
  abort.abort(new Error('stopped'));
  const err = await archive.each(zip, await archive.inspect(zip, {}), async () => {}, abort.signal).catch((e) => e);
  assert.is((err as Error).message, 'stopped');
});

test.run();
