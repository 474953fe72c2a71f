import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readReleaseLog, ReleaseLog, removeReleaseLog } from '../../../../plugins/shared/release/release-log.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-release-log-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(dir, `r${++n}.log`);
const texts = async (path: string, limit = 1000) => (await readReleaseLog(path, limit))?.map((l) => l.text);

test('lines are kept with the time they were printed, read back oldest first, the last ones when asked', async () => {
  const path = fresh();
  assert.is(await readReleaseLog(path, 10), null, 'nothing kept yet');
  const log = new ReleaseLog(path);
  const before = Date.now();
  for (const line of ['one', 'two', 'three\r']) log.line(line);
  await log.flush();
  const lines = (await readReleaseLog(path, 10))!;
  assert.equal(
    lines.map((l) => l.text),
    ['one', 'two', 'three'],
  );
  for (const { at } of lines) assert.ok(Date.parse(at) >= before - 5 && Date.parse(at) <= Date.now(), at);
  assert.equal(await texts(path, 2), ['two', 'three']);
  assert.is((statSync(path).mode & 0o777).toString(8), '600');
  await log.close();
  log.line('after close');
  await log.flush();
  assert.equal(await texts(path), ['one', 'two', 'three'], 'nothing after close');
});

test('a long line is cut at 2,000 characters', async () => {
  const path = fresh();
  const log = new ReleaseLog(path);
  log.line('x'.repeat(5000));
  await log.close();
  assert.equal(await texts(path), [`${'x'.repeat(2000)}…`]);
});

test('past its size the log is rotated: the file before it is kept, and read from when asked for more', async () => {
  const path = fresh();
  const log = new ReleaseLog(path, { rotateBytes: 4096, bytesPerSecond: 1 << 30 });
  for (let i = 0; i < 300; i++) {
    log.line(`line ${i}`);
    if (i % 10 === 9) await log.flush();
  }
  await log.close();
  assert.ok(existsSync(`${path}.1`), 'rotated');
  assert.ok(statSync(path).size <= 4096 && statSync(`${path}.1`).size <= 4096);
  const all = (await texts(path))!;
  assert.is(all.at(-1), 'line 299');
  assert.ok(all.length > 100 && all.length < 300, `${all.length} lines: the two files, not the first ones`);
  assert.equal(
    all,
    [...all].sort((a, b) => Number(a.split(' ')[1]) - Number(b.split(' ')[1])),
    'in order',
  );
  assert.equal(await texts(path, 3), ['line 297', 'line 298', 'line 299']);
  await removeReleaseLog(path);
  assert.not.ok(existsSync(path) || existsSync(`${path}.1`));
  assert.is(await readReleaseLog(path, 10), null);
});

test('an app printing past the rate keeps only that much a second, and the rest is counted', async () => {
  const path = fresh();
  const log = new ReleaseLog(path, { rotateBytes: 1 << 20, bytesPerSecond: 2048 });
  for (let i = 0; i < 1000; i++) log.line(`flood ${i} ${'y'.repeat(50)}`);
  await log.flush();
  const kept = readFileSync(path, 'utf8');
  assert.ok(kept.length <= 2048, `${kept.length} bytes kept in the first second`);
  await new Promise((r) => setTimeout(r, 1050));
  log.line('calm again');
  await log.close();
  const all = (await texts(path))!;
  const dropped = 1000 - all.filter((t) => t.startsWith('flood ')).length;
  assert.ok(dropped > 900, `${dropped} dropped`);
  assert.equal(all.slice(-2), [
    `[hoist] ${dropped} lines were not kept: the app printed more than 2 KiB a second`,
    'calm again',
  ]);
});

test.run();
