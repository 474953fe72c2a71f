import { token } from '../tokens.js';

/** Hashes and checks passwords. Plugin: `hasher-argon2` (argon2id). */
export interface PasswordHasher {
  /** Returns a self-describing hash string (algorithm, parameters and salt included). */
  hash(password: string): Promise<string>;
  /** True when `password` matches `hash`; false (never a throw) for a malformed hash. */
  verify(hash: string, password: string): Promise<boolean>;
}

export const PASSWORD_HASHER = token<PasswordHasher>('hoist.PasswordHasher');
