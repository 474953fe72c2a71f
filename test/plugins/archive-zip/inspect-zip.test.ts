import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ArchiveError } from '../../../plugins/archive-zip/archive-error.js';
import type { InspectOptions } from '../../../plugins/archive-zip/archive-types.js';
import { inspectZip } from '../../../plugins/archive-zip/inspect-zip.js';
import { rawZip, unixAttrs, type RawEntry } from '../../helpers/raw-zip.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-inspect-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

/** Writes a ZIP (entries or raw bytes) to a fresh file and returns its path. */
function zipFile(content: RawEntry[] | Buffer): string {
  const path = join(dir, `${++n}.zip`);
  writeFileSync(path, Array.isArray(content) ? rawZip(content) : content);
  return path;
}

/** Asserts inspectZip refuses the archive with this code and offending entry. */
async function refuses(content: RawEntry[] | Buffer, code: string, entry: string | null, options?: InspectOptions) {
  try {
    await inspectZip(zipFile(content), options);
  } catch (err) {
    assert.instance(err, ArchiveError);
    const { details, message } = err as ArchiveError;
    assert.is(details.code, code, message);
    assert.is(details.entry, entry);
    assert.is((err as ArchiveError).code, 'invalid_request');
    assert.ok(message.length > 10);
    return message;
  }
  assert.unreachable(`expected ${code}`);
}

const file = (name: string, data = `content of ${name}\n`): RawEntry => ({ name, data });

test('a plain archive gives its files, sizes and modes', async () => {
  const m = await inspectZip(
    zipFile([
      file('index.html', '<h1>hi</h1>'),
      { name: 'assets/', attrs: unixAttrs(0o40755) },
      { name: 'assets/run.sh', data: '#!/bin/sh\n', attrs: unixAttrs(0o100755), method: 8 },
    ]),
  );
  assert.equal(m.files, [
    { path: 'index.html', name: 'index.html', size: 11, compressedSize: 11, mode: 0o644 },
    { path: 'assets/run.sh', name: 'assets/run.sh', size: 10, compressedSize: m.files[1].compressedSize, mode: 0o755 },
  ]);
  assert.is(m.prefix, '');
  assert.is(m.totalSize, 21);
  assert.is(m.fileCount, 2);
  assert.equal(m.warnings, []);
});

test('.. segments are archive_path_traversal', async () => {
  await refuses([file('ok.txt'), file('../evil.txt')], 'archive_path_traversal', '../evil.txt');
  await refuses([file('a/../../evil.txt')], 'archive_path_traversal', 'a/../../evil.txt');
});

test('absolute and drive-letter paths are archive_absolute_path', async () => {
  await refuses([file('/etc/passwd')], 'archive_absolute_path', '/etc/passwd');
  await refuses([file('C:/Windows/evil.dll')], 'archive_absolute_path', 'C:/Windows/evil.dll');
});

test('backslashes are archive_backslash', async () => {
  await refuses([file('dir\\evil.txt')], 'archive_backslash', 'dir\\evil.txt');
});

test('symbolic link entries are archive_symlink', async () => {
  await refuses(
    [file('index.html'), { name: 'link', data: '/etc/passwd', attrs: unixAttrs(0o120777) }],
    'archive_symlink',
    'link',
  );
});

test('encrypted entries are archive_encrypted', async () => {
  await refuses(
    [{ name: 'secret.txt', data: 'x'.repeat(40), method: 8, flags: 0x801 }],
    'archive_encrypted',
    'secret.txt',
  );
});

test('duplicate names are archive_duplicate_entry: exact, NFC against NFD, case, file against folder', async () => {
  await refuses([file('a.txt'), file('a.txt')], 'archive_duplicate_entry', 'a.txt');
  await refuses([file('caf\u00e9.txt'), file('cafe\u0301.txt')], 'archive_duplicate_entry', 'cafe\u0301.txt');
  await refuses([file('site/Index.html'), file('site/index.html')], 'archive_duplicate_entry', 'site/index.html');
  await refuses([file('lib'), file('LIB/x.js')], 'archive_duplicate_entry', 'LIB/x.js');
  await refuses([file('lib/x.js'), file('lib')], 'archive_duplicate_entry', 'lib');
});

test('two entries sharing their bytes are archive_overlapping_entries', async () => {
  const payload = 'A'.repeat(1000);
  await refuses(
    [
      { name: 'a.txt', data: payload },
      { name: 'b.txt', data: payload, localAt: 0 },
    ],
    'archive_overlapping_entries',
    'b.txt',
  );
});

test('more entries than allowed are archive_too_many_entries (lowered limit)', async () => {
  const entries = Array.from({ length: 11 }, (_, i) => file(`f${i}.txt`));
  await refuses(entries, 'archive_too_many_entries', null, { maxEntries: 10 });
  const m = await inspectZip(zipFile(entries.slice(0, 10)), { maxEntries: 10 });
  assert.is(m.fileCount, 10);
});

test('20,001 entries are archive_too_many_entries at the default limit', async () => {
  const message = await refuses(
    Array.from({ length: 20_001 }, (_, i) => ({ name: `f${i}` })),
    'archive_too_many_entries',
    null,
  );
  assert.match(message!, '20000');
});

test('declared sizes past the budget are archive_too_large_uncompressed', async () => {
  await refuses(
    [file('a.txt', 'a'.repeat(600)), file('b.txt', 'b'.repeat(600))],
    'archive_too_large_uncompressed',
    'b.txt',
    { maxUncompressedBytes: 1000 },
  );
  // Default limit, judged from the central directory alone: a tiny entry that claims 4 GB.
  await refuses(
    [{ name: 'huge.bin', data: 'x', method: 8, size: 0xfffffff0 }],
    'archive_too_large_uncompressed',
    'huge.bin',
  );
});

test('a highly compressible big entry is archive_compression_ratio', async () => {
  await refuses(
    [file('index.html'), { name: 'zeros.bin', data: Buffer.alloc(10_000_000), method: 8 }],
    'archive_compression_ratio',
    'zeros.bin',
  );
});

test('many small compressible entries are archive_compression_ratio for the archive as a whole', async () => {
  const entries = Array.from({ length: 8 }, (_, i) => ({
    name: `z${i}.bin`,
    data: Buffer.alloc(1_000_000),
    method: 8,
  }));
  await refuses(entries, 'archive_compression_ratio', null);
  const m = await inspectZip(zipFile(entries), { maxCompressionRatio: 2000 });
  assert.is(m.totalSize, 8_000_000);
});

test('random bytes, a text file and an empty file are archive_not_zip', async () => {
  await refuses(randomBytes(4096), 'archive_not_zip', null);
  await refuses(Buffer.from('<html>not a zip</html>'), 'archive_not_zip', null);
  await refuses(Buffer.alloc(0), 'archive_not_zip', null);
});

test('a truncated ZIP is archive_invalid', async () => {
  const whole = rawZip([file('index.html', 'x'.repeat(500)), file('b.txt')]);
  await refuses(whole.subarray(0, whole.length - 40), 'archive_invalid', null);
  await refuses(whole.subarray(0, 300), 'archive_invalid', null);
});

test('a central directory pointing past the end of the file is archive_invalid naming the entry', async () => {
  await refuses([file('index.html'), { name: 'ghost.txt', data: 'x', localAt: 5_000 }], 'archive_invalid', 'ghost.txt');
});

test('a stored entry whose sizes disagree is archive_invalid', async () => {
  await refuses([{ name: 'a.txt', data: 'hello', size: 50 }], 'archive_invalid', null);
});

test('an unsupported compression method is archive_invalid', async () => {
  await refuses([{ name: 'a.bz2', data: 'BZh9', method: 12 }], 'archive_invalid', 'a.bz2');
});

/** A message shows no raw control character: every one is escaped. */
const printable = (message: string) =>
  assert.not.match(message, /[\u0000-\u001f\u007f-\u009f]/, `raw control character in ${JSON.stringify(message)}`);

test('control characters in a UTF-8 name (C0, DEL, C1): archive_control_character, escaped', async () => {
  const names = [
    'a\0b.txt',
    'a\u0001.html',
    'bell\u0007.html',
    '\u001b[31mred\u001b[0m.html',
    'line\r\nbreak.html',
    'tab\there.html',
    'del\u007f.html',
    'csi\u009b31m.html',
    'dir\u0001/index.html',
  ];
  for (const name of names) {
    const message = (await refuses([file('index.html'), file(name)], 'archive_control_character', name))!;
    printable(message);
    assert.ok(
      message.includes(
        JSON.stringify(name)
          .replace(/\u009b/g, '\\u009b')
          .replace(/\u007f/g, '\\u007f'),
      ),
      message,
    );
    assert.match(message, 'printable');
  }
});

test('control bytes in a name without the UTF-8 flag (CP437) are archive_control_character', async () => {
  // yauzl reads such a name as CP437, where these bytes are symbols.
  const cp437: Record<number, string> = {
    0x01: '\u263a',
    0x07: '\u2022',
    0x0a: '\u25d9',
    0x1b: '\u2190',
    0x7f: '\u2302',
  };
  for (const byte of [0x01, 0x07, 0x0a, 0x1b, 0x7f]) {
    const raw = Buffer.from([0x61, byte, 0x2e, 0x68, 0x74, 0x6d, 0x6c]);
    const message = (await refuses(
      [file('index.html'), { name: raw, data: 'x', flags: 0 }],
      'archive_control_character',
      `a${cp437[byte]}.html`,
    ))!;
    printable(message);
    assert.match(message, `byte 0x${byte.toString(16).padStart(2, '0')} at byte 2`);
  }
  // A name without the flag whose bytes are printable in CP437 passes.
  const m = await inspectZip(
    zipFile([file('index.html'), { name: Buffer.from('caf\x82.html', 'latin1'), data: 'x', flags: 0 }]),
  );
  assert.equal(
    m.files.map((f) => f.path),
    ['index.html', 'caf\u00e9.html'],
  );
});

test('a name flagged UTF-8 that is not UTF-8 is archive_invalid_utf8', async () => {
  const raw = Buffer.from([0x62, 0x61, 0x64, 0xff, 0xfe, 0x2e, 0x68, 0x74, 0x6d, 0x6c]);
  const message = (await refuses(
    [file('index.html'), { name: raw, data: 'x' }],
    'archive_invalid_utf8',
    raw.toString('utf8'),
  ))!;
  assert.match(message, 'not valid UTF-8');
});

test('a folder entry carrying data is archive_directory_with_data; an empty one is fine', async () => {
  const data = 'x'.repeat(34);
  const message = (await refuses(
    [file('index.html'), { name: 'assets/', data, attrs: unixAttrs(0o40755) }],
    'archive_directory_with_data',
    'assets/',
  ))!;
  assert.match(message, '34 bytes');
  await refuses(
    [file('index.html'), { name: 'assets/', data, method: 8, attrs: unixAttrs(0o40755) }],
    'archive_directory_with_data',
    'assets/',
  );
  await refuses(
    [file('index.html'), { name: 'assets', data, attrs: unixAttrs(0o40755) }],
    'archive_directory_with_data',
    'assets',
  );
  await refuses([file('index.html'), { name: 'plain/', data }], 'archive_directory_with_data', 'plain/');
  const m = await inspectZip(
    zipFile([
      file('index.html'),
      { name: 'assets/', attrs: unixAttrs(0o40755) },
      { name: 'more/', method: 8 },
      file('assets/a.css'),
    ]),
  );
  assert.is(m.fileCount, 2);
});

test('a path segment over 255 bytes is archive_name_too_long (bytes, not characters); 255 bytes pass', async () => {
  const long = `${'a'.repeat(251)}.html`;
  const message = (await refuses(
    [file('index.html'), file(`assets/${long}`)],
    'archive_name_too_long',
    `assets/${long}`,
  ))!;
  assert.match(message, '256 bytes');
  assert.match(message, 'at most 255');
  await refuses(
    [file('index.html'), file(`${'\u00e9'.repeat(128)}/x.html`)],
    'archive_name_too_long',
    `${'\u00e9'.repeat(128)}/x.html`,
  );
  const ok = await inspectZip(
    zipFile([file('index.html'), file(`${'a'.repeat(250)}.html`), file(`${'\u00e9'.repeat(127)}/x.html`)]),
  );
  assert.is(ok.fileCount, 3);
});

test('a path over 1,024 bytes is archive_path_too_long; deeper than 64 levels is archive_path_too_deep', async () => {
  const seg = 'd'.repeat(200);
  const tooLong = `${[seg, seg, seg, seg, seg].join('/')}/${'f'.repeat(20)}`; // 1,025 bytes
  assert.is(Buffer.byteLength(tooLong), 1025);
  const message = (await refuses([file('index.html'), file(tooLong)], 'archive_path_too_long', tooLong))!;
  assert.match(message, '1025 bytes');
  assert.ok(message.length < 600, 'a long name is shortened in the message');
  const fits = tooLong.slice(0, -1);
  assert.is((await inspectZip(zipFile([file('index.html'), file(fits)]))).fileCount, 2);

  const deep = `${Array.from({ length: 64 }, () => 'd').join('/')}/x.html`;
  await refuses([file('index.html'), file(deep)], 'archive_path_too_deep', deep);
  const shallow = `${Array.from({ length: 63 }, () => 'd').join('/')}/x.html`;
  assert.is((await inspectZip(zipFile([file('index.html'), file(shallow)]))).fileCount, 2);
});

test('names in every message are escaped: quotes and backslashes too', async () => {
  const message = (await refuses(
    [file('index.html'), { name: 'say "hi".html', data: 'x', flags: 0x801, method: 8 }],
    'archive_encrypted',
    'say "hi".html',
  ))!;
  assert.match(message, 'Entry "say \\"hi\\".html"');
});

test('an empty ZIP, or one with only folders and OS metadata, is archive_empty', async () => {
  await refuses([], 'archive_empty', null);
  await refuses(
    [{ name: 'site/' }, file('__MACOSX/site/._index.html'), file('site/.DS_Store'), file('Thumbs.db')],
    'archive_empty',
    null,
  );
});

test('a single top-level folder is unwrapped, with __MACOSX beside it ignored', async () => {
  const m = await inspectZip(
    zipFile([
      { name: 'site/' },
      file('site/index.html'),
      file('site/css/app.css'),
      file('site/.DS_Store'),
      file('__MACOSX/site/._index.html'),
      file('__MACOSX/site/css/._app.css'),
    ]),
  );
  assert.equal(
    m.files.map((f) => [f.path, f.name]),
    [
      ['index.html', 'site/index.html'],
      ['css/app.css', 'site/css/app.css'],
    ],
  );
  assert.is(m.prefix, 'site/');
  assert.equal(m.warnings, [
    'ignored 3 OS metadata entries (__MACOSX/, .DS_Store, Thumbs.db)',
    'unwrapped top-level folder site/',
  ]);
});

test('nothing is unwrapped when a file sits at the top or two folders do', async () => {
  const a = await inspectZip(zipFile([file('site/index.html'), file('README.md')]));
  assert.is(a.prefix, '');
  assert.equal(
    a.files.map((f) => f.path),
    ['site/index.html', 'README.md'],
  );
  const b = await inspectZip(zipFile([file('site/index.html'), file('docs/index.html')]));
  assert.is(b.prefix, '');
});

test('rootDirectory is applied after unwrapping; ".", "./" and "" mean the root', async () => {
  const entries = [
    file('repo/package.json'),
    file('repo/apps/web/index.html'),
    file('repo/apps/web/js/app.js'),
    file('repo/apps/api/server.js'),
  ];
  const m = await inspectZip(zipFile(entries), { rootDirectory: 'apps/web/' });
  assert.equal(
    m.files.map((f) => f.path),
    ['index.html', 'js/app.js'],
  );
  assert.is(m.prefix, 'repo/apps/web/');
  assert.is(m.totalSize, m.files[0].size + m.files[1].size);
  for (const rootDirectory of ['.', './', '', '  ', null])
    assert.is((await inspectZip(zipFile(entries), { rootDirectory })).fileCount, 4, String(rootDirectory));
  const nfd = await inspectZip(zipFile([file('cafe\u0301/index.html'), file('x.txt')]), {
    rootDirectory: './caf\u00e9',
  });
  assert.equal(
    nfd.files.map((f) => f.path),
    ['index.html'],
  );
});

test('a rootDirectory with no files is archive_root_directory_missing', async () => {
  await refuses([file('repo/index.html'), file('repo/docs/a.md')], 'archive_root_directory_missing', null, {
    rootDirectory: 'app',
  });
  await refuses([file('index.html'), { name: 'empty/' }], 'archive_root_directory_missing', null, {
    rootDirectory: 'empty',
  });
});

test('a rootDirectory leaving the archive is archive_root_directory_invalid', async () => {
  for (const rootDirectory of ['../x', 'a/../../b', '/etc', 'C:/x', 'a\\b'])
    await refuses([file('index.html')], 'archive_root_directory_invalid', null, { rootDirectory });
});

test('an explicit undefined limit keeps the default', async () => {
  await refuses([file('a.txt', 'a'.repeat(600))], 'archive_too_large_uncompressed', 'a.txt', {
    maxUncompressedBytes: 100,
    maxEntries: undefined,
  });
});

test.run();
