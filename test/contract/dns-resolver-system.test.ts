import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../config/load.js';
import resolverSystem from '../../plugins/resolver-system/index.js';
import { parseDnsServers } from '../../plugins/resolver-system/system-dns-resolver.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { dnsResolverContract } from './dns-resolver.js';

dnsResolverContract('resolver-system', async ({ timeoutMs }) => {
  const server = await startDnsServer();
  const config = loadConfig({}, { dnsServers: server.address, dnsTimeoutMs: timeoutMs, dnsTries: 1 });
  const resolver = await resolverSystem.create({ config });
  return { resolver, server, cleanup: () => server.close() };
});

test('the plugin is resolver-system, bound to the dns port', () => {
  assert.is(resolverSystem.id, 'resolver-system');
  assert.is(resolverSystem.port, 'dns');
});

test('dnsServers takes IPs with optional ports; empty means the system resolvers', () => {
  assert.equal(parseDnsServers(undefined), []);
  assert.equal(parseDnsServers(' 127.0.0.1:5353, 10.0.0.1 ,[::1]:53,::1'), [
    '127.0.0.1:5353',
    '10.0.0.1',
    '[::1]:53',
    '::1',
  ]);
});

test('a dnsServers entry that is not an IP address is refused, naming the entry', () => {
  for (const bad of ['dns.example.com', '127.0.0.1:0', '127.0.0.1:70000', '[::1]:x', '1.2.3']) {
    assert.throws(
      () => parseDnsServers(bad),
      (err: Error) => err.message.includes('dnsServers') && err.message.includes(JSON.stringify(bad)),
      bad,
    );
  }
  const config = loadConfig({}, { dnsServers: 'resolver.example' });
  assert.throws(() => resolverSystem.create({ config }), /dnsServers/);
});

test.run();
