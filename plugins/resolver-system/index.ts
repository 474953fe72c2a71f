import type { PluginDefinition } from '../../core/plugin.js';
import { DNS_RESOLVER, type DnsResolver } from '../../core/ports/dns-resolver.js';
import { parseDnsServers, SystemDnsResolver } from './system-dns-resolver.js';

export default {
  id: 'resolver-system',
  port: 'dns',
  name: 'system',
  token: DNS_RESOLVER,
  create({ config }) {
    return new SystemDnsResolver({ servers: parseDnsServers(config.dnsServers), timeoutMs: config.dnsTimeoutMs, tries: config.dnsTries });
  },
} satisfies PluginDefinition<DnsResolver>;
