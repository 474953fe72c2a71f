// The edge's usage meter on node:http: each answer's bytes count for the project its own Host names, also when a
// request for another project is pipelined behind it on the same connection.
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUsageMeter, servedFor } from '../../../adapters/edge/usage-meter.js';
import type { Kernel } from '../../../adapters/kernel.js';
import { USAGE_SERVICE, type UsageCount } from '../../../core/usage/usage-service.js';

const BIG = 500_000;

/** A node:http server answering `small.test` with one byte and `big.test` with BIG bytes, metered. */
async function metered() {
  const recorded: UsageCount[] = [];
  const kernel = {
    config: { edgeUsageFlushSeconds: 3600 },
    log: { warn() {} },
    get: (t: unknown) => (t === USAGE_SERVICE ? { record: async (c: UsageCount[]) => void recorded.push(...c) } : null),
  } as unknown as Kernel;
  const projects: Record<string, string> = { 'small.test': 'small', 'big.test': 'big' };
  const meter = createUsageMeter(kernel);
  const server: Server = createServer((req, res) => {
    meter.watch(res);
    // As the edge does once the Host names a project.
    if (req.headers.host && projects[req.headers.host]) servedFor(res, projects[req.headers.host]);
    res.end(req.headers.host === 'big.test' ? Buffer.alloc(BIG, 'x') : 'v');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { recorded, meter, server, port: (server.address() as AddressInfo).port };
}

/** Sends `raw` on one connection and resolves the bytes received once the server closes it. */
function exchange(port: number, raw: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let got = 0;
    const socket = connect(port, '127.0.0.1', () => socket.write(raw));
    socket
      .on('data', (d) => (got += d.length))
      .on('error', reject)
      .on('close', () => resolve(got));
  });
}

test('a large answer pipelined behind another project counts for its own project, not the first', async () => {
  const { recorded, meter, server, port } = await metered();
  const got = await exchange(
    port,
    'GET / HTTP/1.1\r\nHost: small.test\r\n\r\nGET / HTTP/1.1\r\nHost: big.test\r\nConnection: close\r\n\r\n',
  );
  await meter.stop();
  server.close();
  const of = (id: string) => recorded.find((c) => c.projectId === id)!;
  assert.is(of('small').requests, 1);
  assert.is(of('big').requests, 1);
  assert.ok(of('small').bytes < 1000, `small counted ${of('small').bytes} bytes`);
  assert.ok(of('big').bytes > BIG, `big counted ${of('big').bytes} bytes`);
  assert.is(of('small').bytes + of('big').bytes, got);
});

test('the answers of one keep-alive connection are counted once each', async () => {
  const { recorded, meter, server, port } = await metered();
  const got = await exchange(
    port,
    'GET / HTTP/1.1\r\nHost: big.test\r\n\r\nGET / HTTP/1.1\r\nHost: small.test\r\n\r\n' +
      'GET / HTTP/1.1\r\nHost: nothing.test\r\nConnection: close\r\n\r\n',
  );
  await meter.stop();
  server.close();
  const total = recorded.reduce((n, c) => n + c.requests, 0);
  assert.is(total, 2);
  const counted = recorded.reduce((n, c) => n + c.bytes, 0);
  assert.ok(counted < got && counted > BIG, `${counted} of ${got}`);
});

test.run();
