import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BwrapSandbox } from '../../../plugins/sandbox-bwrap/bwrap-sandbox.js';
import { denyRuleset, SLIRP_DNS } from '../../../plugins/sandbox-bwrap/network.js';
import { registryPort } from '../../../plugins/shared/sandbox/registry-addresses.js';
import { testLimits, workspaceIn } from '../../helpers/sandbox.js';

const dataDir = mkdtempSync(join(tmpdir(), 'hoist-bwrap-network-'));
chmodSync(dataDir, 0o711);
test.after(() => rmSync(dataDir, { recursive: true, force: true }));

test('the npm registry port is its URL port, else its scheme default', () => {
  assert.is(registryPort('http://10.1.2.3:4873/'), 4873);
  assert.is(registryPort('https://npm.internal/'), 443);
  assert.is(registryPort('http://npm.internal/'), 80);
  assert.is(registryPort(undefined), null);
});

test("the ruleset lets the registry's addresses through on the registry's port only", () => {
  const rules = denyRuleset({ v4: ['10.0.0.0/8'], v6: ['::1'] }, { addresses: ['10.1.2.3', 'fd00::1'], port: 4873 });
  assert.ok(rules.includes(`ip daddr ${SLIRP_DNS} accept`), rules);
  assert.ok(rules.includes('ip daddr { 10.1.2.3 } tcp dport 4873 accept'), rules);
  assert.not.ok(/ip daddr \{[^}]*10\.1\.2\.3[^}]*\} accept/.test(rules), rules);
  assert.not.ok(rules.includes('fd00::1'), rules);
  const none = denyRuleset({ v4: ['10.0.0.0/8'], v6: ['::1'] }, { addresses: [], port: null });
  assert.not.ok(none.includes('dport'), none);
});

test(
  "a registry on the host's own address opens only its port: a service beside it (PostgreSQL, NATS, the API) " +
    'stays refused',
  async () => {
    const hostIp = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    if (!hostIp) return console.log('skip: this host has no non-loopback IPv4 address');
    const listen = async (answer: string) => {
      const server = net.createServer((c) => c.end(`${answer}\n`));
      await new Promise<void>((r) => server.listen(0, '0.0.0.0', r));
      return { server, port: (server.address() as net.AddressInfo).port };
    };
    const registry = await listen('REGISTRY');
    const service = await listen('SERVICE-SECRET');
    try {
      const sandbox = new BwrapSandbox({
        dataDir,
        uidBase: 1_900_000_000,
        denyCidrs: [],
        npmRegistry: `http://${hostIp}:${registry.port}/`,
        serveCpuMillis: 1000,
      });
      const probe = (port: number) =>
        `node -e "const s=require('net').connect(${port},'${hostIp}');s.setTimeout(3000);` +
        `s.on('data',d=>{console.log(String(d).trim());s.destroy()});s.on('error',e=>console.log('${port}',e.code));` +
        `s.on('timeout',()=>{console.log('${port} timeout');s.destroy()})"`;
      const lines: string[] = [];
      const r = await sandbox.run({
        command: `${probe(registry.port)}; ${probe(service.port)}`,
        workspace: workspaceIn(dataDir, 'w'),
        env: {},
        network: 'egress',
        limits: testLimits,
        log: (l) => lines.push(l),
      });
      assert.is(r.reason, 'exited', lines.join('\n'));
      assert.ok(lines.includes('REGISTRY'), `the registry answers:\n${lines.join('\n')}`);
      assert.not.ok(
        lines.some((l) => l.includes('SERVICE-SECRET')),
        `a service beside it answered:\n${lines.join('\n')}`,
      );
      assert.ok(lines.includes(`${service.port} ECONNREFUSED`), lines.join('\n'));
    } finally {
      registry.server.close();
      service.server.close();
    }
  },
);

test.run();
