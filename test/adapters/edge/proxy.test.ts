import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createReleaseProxy, type ForwardingOptions } from '../../../adapters/edge/proxy.js';
import { rawRequest } from '../../helpers/raw-http.js';

// A release that answers with the headers it got (HTTP), or writes them after a 101 (upgrade).
const seen = (req: http.IncomingMessage) => ({ headers: req.headers, raw: req.rawHeaders });
const release = http.createServer((req, res) =>
  res.setHeader('content-type', 'application/json').end(JSON.stringify(seen(req))),
);
release.on('upgrade', (req, socket) =>
  socket.end(
    `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n${JSON.stringify(seen(req))}`,
  ),
);

/** An edge stand-in: every request and upgrade goes through the release proxy with `options`. */
async function front(options: ForwardingOptions) {
  const target = `http://127.0.0.1:${(release.address() as AddressInfo).port}`;
  const proxy = createReleaseProxy(options);
  const server = http.createServer((req, res) => proxy.web(req, res, target, {}));
  server.on('upgrade', (req, socket, head) => proxy.ws(req, socket, head, target));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((r) => server.close(r)),
  };
}

// Every claim a client can make about who it is, where it came from and how.
const spoofed = {
  'x-forwarded-for': '6.6.6.6',
  'X-Forwarded-For': '7.7.7.7',
  'x-forwarded-host': 'victim.example',
  'x-forwarded-proto': 'https',
  'x-forwarded-port': '443',
  forwarded: 'for=6.6.6.6;host=victim.example;proto=https',
  'x-real-ip': '6.6.6.6',
  connection: 'close',
};

test.before(() => new Promise<void>((r) => release.listen(0, '127.0.0.1', r)));
test.after(() => new Promise<void>((r) => release.close(() => r())));

test(
  'without trustProxy the edge sets X-Forwarded-For/-Host/-Proto/-Port itself and ' + 'drops Forwarded and X-Real-IP',
  async () => {
    const f = await front({ trustProxy: false, appsScheme: 'http' });
    try {
      const conn = await rawRequest(f.url, 'GET', '/who', spoofed);
      const res = await conn.response;
      assert.is(res.status, 200, JSON.stringify(res));
      const h = res.body.headers;
      assert.is(h['x-forwarded-for'], '127.0.0.1', "the peer only, none of the client's claims");
      assert.is(h['x-forwarded-host'], new URL(f.url).host, 'the Host the edge was asked for');
      assert.is(h['x-forwarded-proto'], 'http');
      assert.is(h['x-forwarded-port'], new URL(f.url).port);
      assert.is(h.forwarded, undefined);
      assert.is(h['x-real-ip'], undefined);
      // One header of each, not the client's next to the edge's.
      const names = (res.body.raw as string[]).filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
      for (const n of ['x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-forwarded-port'])
        assert.is(names.filter((x) => x === n).length, 1, n);
    } finally {
      await f.close();
    }
  },
);

test(
  'a request without any such header gets them all from the edge; the Host port or ' +
    "the scheme's default is the port",
  async () => {
    const f = await front({ trustProxy: false, appsScheme: 'http' });
    try {
      const res = await (await rawRequest(f.url, 'GET', '/', { connection: 'close' })).response;
      assert.is(res.body.headers['x-forwarded-for'], '127.0.0.1');
      assert.is(res.body.headers['x-forwarded-proto'], 'http');
      assert.is(res.body.headers['x-forwarded-host'], new URL(f.url).host);
      assert.is(res.body.headers['x-forwarded-port'], new URL(f.url).port);
      // A Host without a port: the scheme's default.
      const bare = await (
        await rawRequest(f.url, 'GET', '/', { host: 'site.localhost', connection: 'close' })
      ).response;
      assert.is(bare.body.headers['x-forwarded-host'], 'site.localhost');
      assert.is(bare.body.headers['x-forwarded-port'], '80');
    } finally {
      await f.close();
    }
  },
);

test(
  'with appsScheme https (TLS ends in front of the edge) the edge says https, ' + 'whatever the client claims',
  async () => {
    const f = await front({ trustProxy: false, appsScheme: 'https' });
    try {
      const res = await (
        await rawRequest(f.url, 'GET', '/', { 'x-forwarded-proto': 'http', connection: 'close' })
      ).response;
      assert.is(res.body.headers['x-forwarded-proto'], 'https');
      assert.is(res.body.headers['x-forwarded-for'], '127.0.0.1');
    } finally {
      await f.close();
    }
  },
);

test("with trustProxy the proxy's values are kept and its address is appended to X-Forwarded-For", async () => {
  const f = await front({ trustProxy: true, appsScheme: 'http' });
  try {
    const res = await (await rawRequest(f.url, 'GET', '/', spoofed)).response;
    const h = res.body.headers;
    assert.is(h['x-forwarded-for'], '6.6.6.6, 7.7.7.7, 127.0.0.1');
    assert.is(h['x-forwarded-host'], 'victim.example');
    assert.is(h['x-forwarded-proto'], 'https');
    assert.is(h['x-forwarded-port'], '443');
    assert.is(h.forwarded, spoofed.forwarded);
    // And a trusted proxy that sent none gets the edge's own.
    const plain = await (await rawRequest(f.url, 'GET', '/', { connection: 'close' })).response;
    assert.is(plain.body.headers['x-forwarded-for'], '127.0.0.1');
    assert.is(plain.body.headers['x-forwarded-host'], new URL(f.url).host);
    assert.is(plain.body.headers['x-forwarded-proto'], 'http');
  } finally {
    await f.close();
  }
});

test('WebSocket upgrades get the same headers as requests', async () => {
  const f = await front({ trustProxy: false, appsScheme: 'http' });
  try {
    const conn = await rawRequest(f.url, 'GET', '/socket', {
      ...spoofed,
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      'sec-websocket-version': '13',
    });
    let data = '';
    await new Promise<void>((resolve) => conn.socket.on('data', (d) => (data += d)).on('close', () => resolve()));
    assert.match(data, /^HTTP\/1\.1 101/);
    const h = JSON.parse(data.slice(data.indexOf('\r\n\r\n') + 4)).headers;
    assert.is(h['x-forwarded-for'], '127.0.0.1');
    assert.is(h['x-forwarded-host'], new URL(f.url).host);
    assert.is(h['x-forwarded-proto'], 'http');
    assert.is(h.forwarded, undefined);
    assert.is(h['x-real-ip'], undefined);
  } finally {
    await f.close();
  }
});

test.run();
