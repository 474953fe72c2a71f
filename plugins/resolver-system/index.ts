import { CONFIG, definePlugin, PLUGIN_API_VERSION } from '../../core/plugin.js';
import { parseDnsServers, SystemDnsResolver } from './system-dns-resolver.js';

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'resolver-system',
  port: 'dns',
  name: 'system',
  deps: { config: CONFIG },
  create: ({ config }) =>
    new SystemDnsResolver({
      servers: parseDnsServers(config.dnsServers),
      timeoutMs: config.dnsTimeoutMs,
      tries: config.dnsTries,
    }),
});
