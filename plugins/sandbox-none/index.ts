import { definePlugin, LOGGER, PLUGIN_API_VERSION } from '../../core/plugin.js';
import { NoneSandbox } from './none-sandbox.js';

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'sandbox-none',
  port: 'sandbox',
  name: 'none',
  deps: { log: LOGGER },
  create: ({ log }) => new NoneSandbox((m) => log.warn(m)),
});
