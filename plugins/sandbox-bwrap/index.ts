import { CONFIG, definePlugin, PLUGIN_API_VERSION } from '../../core/plugin.js';
import { BwrapSandbox } from './bwrap-sandbox.js';

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'sandbox-bwrap',
  port: 'sandbox',
  name: 'bwrap',
  deps: { config: CONFIG },
  create: ({ config }) =>
    new BwrapSandbox({
      dataDir: config.dataDir,
      uidBase: config.sandboxUidBase,
      npmRegistry: config.npmRegistry,
      serveCpuMillis: config.releaseCpuMillis,
      denyCidrs: (config.sandboxDenyCidrs ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    }),
});
