import argon2 from 'argon2';
import { definePlugin, PLUGIN_API_VERSION } from '../../core/plugin.js';
import type { PasswordHasher } from '../../core/ports/password-hasher.js';

// OWASP's minimum for argon2id: 19 MiB, 2 iterations, 1 lane.
const options = { type: argon2.argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

/** argon2id password hashing. */
export class Argon2Hasher implements PasswordHasher {
  hash(password: string): Promise<string> {
    return argon2.hash(password, options);
  }

  async verify(hash: string, password: string): Promise<boolean> {
    try {
      return await argon2.verify(hash, password);
    } catch {
      return false;
    }
  }
}

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'hasher-argon2',
  port: 'hasher',
  name: 'argon2',
  deps: {},
  create: () => new Argon2Hasher(),
});
