import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { DecryptError, type Cipher, type MasterKeyInfo, type WrappedKey } from '../../core/ports/cipher.js';
import type { KeyRing, MasterKey } from './master-keys.js';

const FORMAT = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** AES-256-GCM: `v1.` then base64url of iv, ciphertext and tag. */
function seal(key: Buffer, plaintext: Buffer, aad: string): string {
  const iv = randomBytes(IV_BYTES);
  const c = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES }).setAAD(Buffer.from(aad, 'utf8'));
  const body = Buffer.concat([c.update(plaintext), c.final()]);
  return `${FORMAT}.${Buffer.concat([iv, body, c.getAuthTag()]).toString('base64url')}`;
}

function open(key: Buffer, sealed: string, aad: string): Buffer {
  if (typeof sealed !== 'string' || !sealed.startsWith(`${FORMAT}.`))
    throw new DecryptError('not a sealed value of a known format');
  const raw = Buffer.from(sealed.slice(FORMAT.length + 1), 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new DecryptError('sealed value is truncated');
  try {
    const d = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES }).setAAD(
      Buffer.from(aad, 'utf8'),
    );
    d.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    return Buffer.concat([d.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), d.final()]);
  } catch (err) {
    throw new DecryptError('authentication failed: wrong key, wrong associated data, or altered text', { cause: err });
  }
}

const derive = (key: Buffer, info: string) => Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), info, 32));
const wrapAad = (keyId: string) => `hoist-data-key:v1:${keyId}`;

/**
 * Envelope encryption with node:crypto: random 32-byte data keys wrapped (AES-256-GCM) by a master
 * key from the key ring; values sealed with AES-256-GCM under a key derived (HKDF) from the data
 * key, and digested with HMAC-SHA-256 under another derived key.
 */
export class AesGcmCipher implements Cipher {
  constructor(private readonly ring: KeyRing) {}

  async createDataKey(): Promise<WrappedKey> {
    return this.wrap(randomBytes(32), this.ring.current());
  }

  async encrypt(key: WrappedKey, plaintext: string, aad: string): Promise<string> {
    return seal(derive(this.unwrap(key), 'hoist-value-aes-256-gcm'), Buffer.from(plaintext, 'utf8'), aad);
  }

  async decrypt(key: WrappedKey, sealed: string, aad: string): Promise<string> {
    return open(derive(this.unwrap(key), 'hoist-value-aes-256-gcm'), sealed, aad).toString('utf8');
  }

  async digest(key: WrappedKey, value: string): Promise<string> {
    return `hmac-sha256:${createHmac('sha256', derive(this.unwrap(key), 'hoist-value-digest'))
      .update(value, 'utf8')
      .digest('hex')}`;
  }

  async rewrap(key: WrappedKey): Promise<WrappedKey> {
    const current = this.ring.current();
    return key.keyId === current.id ? key : this.wrap(this.unwrap(key), current);
  }

  fingerprint(data: string): string {
    // The oldest key stays in the ring across rotations, so fingerprints stay comparable.
    const keys = this.ring.list();
    const base =
      keys.find((k) => k.createdAt && keys.every((o) => !o.createdAt || o.createdAt >= k.createdAt!)) ??
      keys[keys.length - 1];
    return createHmac('sha256', derive(base.key, 'hoist-fingerprint')).update(data, 'utf8').digest('hex');
  }

  async masterKeys(): Promise<MasterKeyInfo[]> {
    const current = this.ring.current().id;
    return this.ring.list().map((k) => ({ id: k.id, createdAt: k.createdAt, current: k.id === current }));
  }

  async addMasterKey(): Promise<MasterKeyInfo> {
    const k = this.ring.add() ?? this.ring.current();
    return { id: k.id, createdAt: k.createdAt, current: true };
  }

  private wrap(dataKey: Buffer, master: MasterKey): WrappedKey {
    return { keyId: master.id, wrapped: seal(master.key, dataKey, wrapAad(master.id)) };
  }

  private unwrap(key: WrappedKey): Buffer {
    const master = this.ring.get(key.keyId);
    if (!master)
      throw new DecryptError(
        `master key ${JSON.stringify(key.keyId)} is not configured (masterKeyFile or HOIST_MASTER_KEY)`,
      );
    const dataKey = open(master.key, key.wrapped, wrapAad(key.keyId));
    if (dataKey.length !== 32) throw new DecryptError('unwrapped data key has the wrong length');
    return dataKey;
  }
}
