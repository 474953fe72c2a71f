// The saved login: readable by its owner only, from the moment the token is in a file.
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readCredentials, saveCredentials } from '../../../../adapters/cli/remote/credentials.js';

const login = {
  api_url: 'https://hoist.example',
  token: 'SECRET-TOKEN',
  expires_at: '2999-01-01T00:00:00Z',
  email: 'a@b.c',
};
let home: string;
const before = process.env.XDG_CONFIG_HOME;
test.before.each(() => {
  home = mkdtempSync(join(tmpdir(), 'hoist-credentials-'));
  process.env.XDG_CONFIG_HOME = home;
});
test.after.each(() => {
  rmSync(home, { recursive: true, force: true });
  if (before === undefined) delete process.env.XDG_CONFIG_HOME;
  else process.env.XDG_CONFIG_HOME = before;
});

test('a new credentials file is 0600 in a 0700 folder, and reads back', async () => {
  const file = await saveCredentials(login);
  assert.is(file, join(home, 'hoist', 'credentials.json'));
  assert.is(statSync(file).mode & 0o777, 0o600);
  assert.is(statSync(join(home, 'hoist')).mode & 0o777, 0o700);
  assert.equal(await readCredentials(), login);
  assert.equal(readdirSync(join(home, 'hoist')), ['credentials.json']);
});

test(
  'over a file left world-readable, the token never goes into it: a reader that opened it before cannot read the ' +
    'token through its descriptor',
  async () => {
    mkdirSync(join(home, 'hoist'), { mode: 0o755 });
    const file = join(home, 'hoist', 'credentials.json');
    writeFileSync(file, '{"old": true}');
    chmodSync(file, 0o644);
    const reader = openSync(file, 'r');
    await saveCredentials(login);
    const seen = Buffer.alloc(4096);
    const n = readSync(reader, seen, 0, seen.length, 0);
    assert.not.match(seen.subarray(0, n).toString(), 'SECRET-TOKEN');
    assert.is(statSync(file).mode & 0o777, 0o600);
    assert.equal(await readCredentials(), login);
  },
);

test('a symlink where the file goes is replaced, not written through', async () => {
  mkdirSync(join(home, 'hoist'), { mode: 0o700 });
  const elsewhere = join(home, 'public.txt');
  writeFileSync(elsewhere, 'public');
  chmodSync(elsewhere, 0o644);
  symlinkSync(elsewhere, join(home, 'hoist', 'credentials.json'));
  await saveCredentials(login);
  assert.not.match(readFileSync(elsewhere, 'utf8'), 'SECRET-TOKEN');
  assert.ok(statSync(join(home, 'hoist', 'credentials.json')).isFile());
  assert.is(statSync(join(home, 'hoist', 'credentials.json')).mode & 0o777, 0o600);
});

test.run();
