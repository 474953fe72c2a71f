import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes } from 'node:crypto';
import { MAX_LINES, Redaction, Redactor, UNCHECKED } from '../../../core/deployments/redaction.js';

const base = mkdtempSync(join(tmpdir(), 'hoist-redact-'));
test.after(() => rmSync(base, { recursive: true, force: true }));
const data = join(base, 'data');
mkdirSync(data);
const noEnv = { valuesOf: async () => [] };

test('paths under the data directory get neutral names: workspace, work folder, release, data', () => {
  const r = new Redaction(data, noEnv).paths;
  const work = `${data}/work/build-0b5e7c1a-aaaa-bbbb-cccc-123456789abc-Xy12Zq`;
  assert.is(
    r.text(`Error: Cannot find module '${work}/src/lib/a.js'`),
    `Error: Cannot find module '<workspace>/lib/a.js'`,
  );
  assert.is(r.text(`cwd=${work}/src`), 'cwd=<workspace>');
  assert.is(r.text(`${work}/upload.zip`), '<work>/upload.zip');
  assert.is(r.text(`at ${work}/srcs/x.js:1:2`), 'at <work>/srcs/x.js:1:2');
  assert.is(r.text(`open '${data}/work/deploy-1-abc/release/a'`), `open '<release>/a'`);
  assert.is(
    r.text(`at Object.<anonymous> (${data}/releases/9f1c/server.js:3:9)`),
    'at Object.<anonymous> (<release>/server.js:3:9)',
  );
  assert.is(r.text(`${data}/storage/versions/ab.zip and ${data}`), '<data>/storage/versions/ab.zip and <data>');
  assert.is(r.text(`"${data}"`), '"<data>"');
});

test('a sibling folder whose name only starts like the data directory is left alone', () => {
  const r = new Redaction(data, noEnv).paths;
  assert.is(r.text(`${data}-old/x and ${data}2/y and ${data}.bak`), `${data}-old/x and ${data}2/y and ${data}.bak`);
});

test('the data directory is also recognised through the link it was configured with', () => {
  const link = join(base, 'link');
  symlinkSync(data, link);
  const r = new Redaction(link, noEnv).paths;
  assert.is(r.text(`${link}/releases/1/a.js ${data}/releases/2/b.js`), '<release>/a.js <release>/b.js');
});

test('secret values of 4 characters or more are masked, longest first, with their base64, URL and JSON forms', () => {
  const token = 'sk_live_9f8e7d6c';
  const longer = `${token}-extended`;
  const odd = 'p@ss w/rd:"q"';
  const r = new Redactor(null, [token, longer, odd, 'abc', '']);
  assert.is(r.text(`token=${token} long=${longer}`), 'token=*** long=***');
  assert.is(r.text(Buffer.from(token).toString('base64')), '***');
  assert.is(r.text(Buffer.from(odd).toString('base64url')), '***');
  assert.is(r.text(`?pw=${encodeURIComponent(odd)}&x=1`), '?pw=***&x=1');
  assert.is(r.text(JSON.stringify({ pw: odd })), '{"pw":"***"}');
  assert.is(r.text('abc abcd'), 'abc abcd', 'values under 4 characters are not masked');
  assert.is(r.text('nothing secret here'), 'nothing secret here');
});

test('each line of a multi-line value is masked on its own; regex characters in values are literal', () => {
  const pem = '-----BEGIN KEY-----\nMIIBOgIBAAJBAKj34GkxFhD9\n-----END KEY-----';
  const r = new Redactor(null, [pem, 'a.b*c+(d)']);
  assert.is(r.text('MIIBOgIBAAJBAKj34GkxFhD9'), '***');
  assert.is(r.text('a.b*c+(d) aXbbc+(d)'), '*** aXbbc+(d)');
});

test("a plan's worth of long values is masked: no RegExp of them all, which V8 refused past ~1.5 MB", () => {
  // 10 values of a pro plan's 32 KiB: their forms made a RegExp "too large", and every build failed.
  const values = Array.from({ length: 10 }, () => randomBytes(24_576).toString('base64'));
  const r = new Redactor(null, values);
  assert.is(r.text('a short line first: no value fits in it'), 'a short line first: no value fits in it');
  assert.is(r.text(`key=${values[3]};`), 'key=***;');
  const b64 = Buffer.from(values[9]).toString('base64');
  assert.is(r.text(`b64 ${b64} end`), 'b64 *** end', 'a form longer than its value');
  assert.is(r.text(`${values[0].slice(0, -1)}!`), `${values[0].slice(0, -1)}!`, 'all but its last character: shown');
});

test('values made to resemble the text cannot make masking slow: past its comparisons the text is not shown', () => {
  const r = new Redactor(null, [`${'A'.repeat(5000)}B`, 'short', 'AAAAZ']);
  assert.is(r.text('A'.repeat(20_000)), UNCHECKED);
  assert.is(r.text(`${'A'.repeat(100)} short`), `${'A'.repeat(100)} ***`, 'an ordinary text is masked as usual');
});

test('a value that is not well-formed text (a lone surrogate) is masked, and masks nothing else away', () => {
  const r = new Redactor(null, ['\ud800lone-surrogate', 'hunter22']);
  assert.is(r.text('x \ud800lone-surrogate y hunter22'), 'x *** y ***');
});

test(`lines of multi-line values are masked on their own up to ${MAX_LINES} in all; each whole value always`, () => {
  const lines = Array.from({ length: MAX_LINES + 5 }, (_, i) => `line-${i}-of-the-key`);
  const r = new Redactor(null, [lines.join('\n'), 'other-value']);
  assert.is(r.text(lines[0]), '***');
  assert.is(r.text(lines[MAX_LINES - 1]), '***');
  assert.is(r.text(lines[MAX_LINES]), lines[MAX_LINES], 'past the bound: not on its own');
  assert.is(r.text(`[${lines.join('\n')}]`), '[***]', 'the whole value');
  assert.is(r.text('other-value'), '***');
});

test(
  'paths first, then secrets: a secret that is part of the data path leaves no part ' + 'of the path readable',
  async () => {
    const redaction = new Redaction(data, { valuesOf: async () => ['data', 'hunter22'] });
    const r = await redaction.forOperation('op', 'project');
    assert.is(r.text(`${data}/releases/1/x.js: hunter22`), '<release>/x.js: ***');
    assert.is((await redaction.forOperation('op', null)).text('hunter22'), 'hunter22', 'no project, no environment');
    const failing = new Redaction(data, { valuesOf: async () => Promise.reject(new Error('no key')) });
    assert.is((await failing.forOperation('op', 'p')).text(`${data}/x hunter22`), '<data>/x hunter22');
  },
);

test.run();
