import { token } from '../tokens.js';

/** A data key as stored: encrypted ("wrapped") by the master key named `keyId`. */
export interface WrappedKey {
  keyId: string;
  /** The wrapped key material (opaque text). */
  wrapped: string;
}

/** A master key as listed: never its material. */
export interface MasterKeyInfo {
  id: string;
  createdAt: Date | null;
  current: boolean;
}

/** Something failed to decrypt: wrong key, wrong associated data, or altered text. Never carries the value. */
export class DecryptError extends Error {
  override name = 'DecryptError';
}

/**
 * Envelope encryption of small secrets (environment values). Each owner (a project) has its own
 * random data key, kept only wrapped by a master key named by id; values are sealed with the data
 * key and bound to associated data, so text moved to another owner or name does not open.
 * Plugin: `cipher-aes-gcm` (AES-256-GCM, master keys from a key file or configuration).
 */
export interface Cipher {
  /** A fresh random data key, wrapped by the current master key. */
  createDataKey(): Promise<WrappedKey>;
  /** Encrypts `plaintext` with the data key, bound to `aad`; the result is opaque text. */
  encrypt(key: WrappedKey, plaintext: string, aad: string): Promise<string>;
  /** Opens what `encrypt` made with the same key and `aad`; throws DecryptError otherwise. */
  decrypt(key: WrappedKey, sealed: string, aad: string): Promise<string>;
  /**
   * A keyed digest of `value` (HMAC under a key derived from the data key): equal values give equal digests within one
   * data key only.
   */
  digest(key: WrappedKey, value: string): Promise<string>;
  /** The same data key wrapped by the current master key (unchanged when it already is). */
  rewrap(key: WrappedKey): Promise<WrappedKey>;
  /**
   * A keyed fingerprint of `data` under a service-wide key derived from the master keys, for comparing requests without
   * storing their secrets.
   */
  fingerprint(data: string): string;
  /** The master keys known now, the current one marked. */
  masterKeys(): Promise<MasterKeyInfo[]>;
  /**
   * Makes a new master key current, keeping the old ones for unwrapping. Where the keys come from
   * configuration (not a key file), adds nothing and answers the current key: the operator adds keys there.
   */
  addMasterKey(): Promise<MasterKeyInfo>;
}

export const CIPHER = token<Cipher>('hoist.Cipher');
