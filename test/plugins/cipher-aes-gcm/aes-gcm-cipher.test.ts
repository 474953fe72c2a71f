import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Writable } from 'node:stream';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DecryptError } from '../../../core/ports/cipher.js';
import { AesGcmCipher } from '../../../plugins/cipher-aes-gcm/aes-gcm-cipher.js';
import { FileKeyRing, keysFromConfig } from '../../../plugins/cipher-aes-gcm/master-keys.js';
import cipherPlugin from '../../../plugins/cipher-aes-gcm/index.js';
import { loadConfig } from '../../../config/load.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-cipher-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const rejects = async (p: Promise<unknown>, what: RegExp) => {
  const err = await p.then(
    () => null,
    (e: Error) => e,
  );
  assert.ok(err instanceof DecryptError, `expected a DecryptError, got ${err}`);
  assert.match(err!.message, what);
  return err!;
};

test('a value opens only with its data key and its associated data', async () => {
  const c = new AesGcmCipher(keysFromConfig(`k1:${randomBytes(32).toString('base64')}`));
  const a = await c.createDataKey();
  const b = await c.createDataKey();
  assert.is(a.keyId, 'k1');
  const sealed = await c.encrypt(a, 'sécret value', 'hoist-env:v1:p1:API_KEY');
  assert.not.ok(sealed.includes('sécret'));
  assert.is(await c.decrypt(a, sealed, 'hoist-env:v1:p1:API_KEY'), 'sécret value');
  const e = await rejects(c.decrypt(a, sealed, 'hoist-env:v1:p1:OTHER'), /authentication failed/);
  assert.not.ok(e.message.includes('sécret'));
  await rejects(c.decrypt(a, sealed, 'hoist-env:v1:p2:API_KEY'), /authentication failed/);
  await rejects(c.decrypt(b, sealed, 'hoist-env:v1:p1:API_KEY'), /authentication failed/);
  // One bit of the ciphertext flipped (the format is `<format>.<base64url of iv|ciphertext|tag>`).
  const dot = sealed.indexOf('.') + 1;
  const raw = Buffer.from(sealed.slice(dot), 'base64url');
  raw[raw.length - 20] ^= 1;
  const flipped = sealed.slice(0, dot) + raw.toString('base64url');
  assert.is.not(flipped, sealed);
  await rejects(c.decrypt(a, flipped, 'hoist-env:v1:p1:API_KEY'), /./);
  await rejects(
    c.decrypt({ keyId: 'k9', wrapped: a.wrapped }, sealed, 'hoist-env:v1:p1:API_KEY'),
    /master key "k9" is not configured/,
  );
  assert.is.not(await c.encrypt(a, 'x', 'aad'), await c.encrypt(a, 'x', 'aad'), 'a fresh IV each time');
});

test('the digest is keyed per data key: equal within one, different across, not a plain hash', async () => {
  const c = new AesGcmCipher(keysFromConfig(`k1:${randomBytes(32).toString('base64')}`));
  const a = await c.createDataKey();
  const b = await c.createDataKey();
  const d = await c.digest(a, 'hunter2');
  assert.match(d, /^hmac-sha256:[0-9a-f]{64}$/);
  assert.is(await c.digest(a, 'hunter2'), d);
  assert.is.not(await c.digest(b, 'hunter2'), d);
  assert.is.not(d.slice(12), createHash('sha256').update('hunter2').digest('hex'));
});

test('the default key file is created once with mode 0600, and a rotation keeps old values readable', async () => {
  const path = join(dir, 'master-keys.json');
  let warned = 0;
  const ring = new FileKeyRing(path, true, () => warned++);
  assert.is(warned, 1);
  assert.is(statSync(path).mode & 0o777, 0o600);
  new FileKeyRing(path, true, () => warned++);
  assert.is(warned, 1, 'an existing file is used, not replaced');
  const c = new AesGcmCipher(ring);
  const first = (await c.masterKeys())[0];
  assert.ok(first.current);
  const key = await c.createDataKey();
  const sealed = await c.encrypt(key, 'v', 'aad');
  const fp = c.fingerprint('x');

  // Another process (the CLI) rotates: this one sees the new key on its next use.
  const other = new AesGcmCipher(new FileKeyRing(path, false, () => {}));
  const added = await other.addMasterKey();
  assert.is.not(added.id, first.id);
  assert.equal(
    (await c.masterKeys()).map((k) => [k.id, k.current]),
    [
      [first.id, false],
      [added.id, true],
    ],
  );
  const rewrapped = await c.rewrap(key);
  assert.is(rewrapped.keyId, added.id);
  assert.is(await c.decrypt(rewrapped, sealed, 'aad'), 'v');
  assert.is(await c.decrypt(key, sealed, 'aad'), 'v', 'the old wrapping still opens while its key is kept');
  assert.is(c.fingerprint('x'), fp, 'fingerprints survive a rotation');
  assert.is(statSync(path).mode & 0o777, 0o600);
  assert.not.ok(readFileSync(path, 'utf8').includes(rewrapped.wrapped));
});

test('configured keys: the first is current; bad entries and a missing configured file are refused', async () => {
  const k1 = randomBytes(32).toString('base64');
  const k2 = randomBytes(32).toString('base64url');
  const c = new AesGcmCipher(keysFromConfig(`new:${k2},old:${k1}`));
  assert.equal(
    (await c.masterKeys()).map((k) => [k.id, k.current]),
    [
      ['new', true],
      ['old', false],
    ],
  );
  assert.is((await c.addMasterKey()).id, 'new', 'configured keys are not added to');
  assert.throws(() => keysFromConfig('nokey'), /entry 1 must be id:base64/);
  assert.throws(() => keysFromConfig(`a:${randomBytes(16).toString('base64')}`), /must be 32 bytes/);
  assert.throws(() => keysFromConfig(`a:${k1},a:${k1}`), /names one id twice/);
  assert.throws(() => new FileKeyRing(join(dir, 'absent.json'), false, () => {}), /does not exist/);
});

test(
  'the plugin creates <dataDir>/master-keys.json on first start and warns once; ' + 'HOIST_MASTER_KEY takes precedence',
  async () => {
    const lines: string[] = [];
    const log = pino(
      { level: 'info' },
      new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) }),
    );
    const dataDir = join(dir, 'data');
    const ctx = (config: object) => ({ config: loadConfig({}, { dataDir, ...config }), log });
    await cipherPlugin.create(ctx({}));
    await cipherPlugin.create(ctx({}));
    assert.is(lines.length, 1);
    assert.match(lines[0], /"level":40/);
    assert.match(lines[0], /created a master key file/);
    assert.ok(lines[0].includes(join(dataDir, 'master-keys.json')));
    assert.is(statSync(join(dataDir, 'master-keys.json')).mode & 0o777, 0o600);
    const configured = await cipherPlugin.create(ctx({ masterKey: `env1:${randomBytes(32).toString('base64')}` }));
    assert.equal(
      (await configured.masterKeys()).map((k) => k.id),
      ['env1'],
    );
    assert.throws(() => cipherPlugin.create(ctx({ masterKeyFile: join(dir, 'missing.json') })), /does not exist/);
  },
);

test.run();
