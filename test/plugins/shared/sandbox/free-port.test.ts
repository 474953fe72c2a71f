import { readFileSync } from 'node:fs';
import net from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freePort } from '../../../../plugins/shared/sandbox/free-port.js';

const ephemeralFrom = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

const listen = (port: number) =>
  new Promise<net.Server>((resolve, reject) => {
    const s = net.createServer().once('error', reject);
    s.listen(port, '127.0.0.1', () => resolve(s));
  });

test('a free port is below the ephemeral range, where outgoing connections take theirs, and can be bound', async () => {
  const ports = new Set<number>();
  for (let i = 0; i < 20; i++) {
    const port = await freePort();
    assert.ok(port >= 10_000 && port < ephemeralFrom, `port ${port} is outside [10000, ${ephemeralFrom})`);
    ports.add(port);
  }
  assert.ok(ports.size > 1, 'the ports are picked at random');
  const port = await freePort();
  const server = await listen(port);
  server.close();
});

test.run();
