import { CONFIG, definePlugin, PLUGIN_API_VERSION } from '../../core/plugin.js';
import { HttpWebhookSender } from './http-webhook-sender.js';

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'webhooks-http',
  port: 'webhooks',
  name: 'http',
  deps: { config: CONFIG },
  create: ({ config }) =>
    new HttpWebhookSender({
      timeoutMs: config.webhookTimeoutSeconds * 1000,
      privateAddresses: config.webhookPrivateAddresses,
    }),
});
