import { join } from 'node:path';
import type { Logger } from 'pino';
import type { PluginDefinition } from '../../core/plugin.js';
import { CIPHER, type Cipher } from '../../core/ports/cipher.js';
import { LOGGER } from '../../core/tokens.js';
import { AesGcmCipher } from './aes-gcm-cipher.js';
import { FileKeyRing, keysFromConfig } from './master-keys.js';

export default {
  id: 'cipher-aes-gcm',
  port: 'cipher',
  name: 'aes-gcm',
  token: CIPHER,
  create: ({ config, get }) => {
    if (config.masterKey) return new AesGcmCipher(keysFromConfig(config.masterKey));
    // Only the default location is created on first start; a configured file that is missing is an error.
    const path = config.masterKeyFile ?? join(config.dataDir, 'master-keys.json');
    const ring = new FileKeyRing(path, config.masterKeyFile === undefined, () =>
      get<Logger>(LOGGER).warn(
        { path },
        'created a master key file for environment variable encryption: back it up (values cannot be decrypted without it), or set HOIST_MASTER_KEY / HOIST_MASTER_KEY_FILE',
      ),
    );
    return new AesGcmCipher(ring);
  },
} satisfies PluginDefinition<Cipher>;
