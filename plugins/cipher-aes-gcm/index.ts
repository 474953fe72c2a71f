import { join } from 'node:path';
import { CONFIG, definePlugin, LOGGER, PLUGIN_API_VERSION } from '../../core/plugin.js';
import { AesGcmCipher } from './aes-gcm-cipher.js';
import { FileKeyRing, keysFromConfig } from './master-keys.js';

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'cipher-aes-gcm',
  port: 'cipher',
  name: 'aes-gcm',
  deps: { config: CONFIG, log: LOGGER },
  create: ({ config, log }) => {
    if (config.masterKey) return new AesGcmCipher(keysFromConfig(config.masterKey));
    // Only the default location is created on first start; a configured file that is missing is an error.
    const path = config.masterKeyFile ?? join(config.dataDir, 'master-keys.json');
    const ring = new FileKeyRing(path, config.masterKeyFile === undefined, () =>
      log.warn(
        { path },
        'created a master key file for environment variable encryption: back it up (values cannot be ' +
          'decrypted without it), or set HOIST_MASTER_KEY / HOIST_MASTER_KEY_FILE',
      ),
    );
    return new AesGcmCipher(ring);
  },
});
