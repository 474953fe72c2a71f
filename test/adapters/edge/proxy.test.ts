import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createReleaseProxy, type ForwardingOptions } from '../../../adapters/edge/proxy.js';
import type { ReleaseTarget } from '../../../core/ports/deployer.js';
import { rawRequest } from '../../helpers/raw-http.js';

// A release that answers with the method, path and headers it got (HTTP), or writes them after a 101 (upgrade).
// `/big` answers 8 MB, `/cut` the start of an answer before its connection is cut. `/status` answers 418 with a
// reason, a header of the edge's own and hop-by-hop ones of its own.
const seen = (req: http.IncomingMessage) => ({
  method: req.method,
  url: req.url,
  headers: req.headers,
  raw: req.rawHeaders,
  port: req.socket.remotePort,
});
const BIG = Buffer.alloc(8 * 1024 * 1024, 'hoist');
const release = http.createServer((req, res) => {
  if (req.url === '/big') return res.end(BIG);
  if (req.url === '/cut') {
    res.writeHead(200, { 'content-length': '100000' }).write('a start');
    return void setTimeout(() => res.socket?.destroy(), 20);
  }
  if (req.url === '/status') {
    res.statusMessage = 'I am a teapot here';
    res.setHeader('x-hoist-release', 'the app says');
    // A draft or private release stays out of search engines, whatever it says.
    res.setHeader('X-Robots-Tag', 'all');
    res.setHeader('keep-alive', 'timeout=3');
    // Instructions to a proxy in front of the edge (nginx's, Apache's): never passed on.
    res.setHeader('X-Accel-Redirect', '/internal/admin');
    res.setHeader('x-accel-buffering', 'no');
    res.setHeader('X-Sendfile', '/etc/passwd');
    // Would clear every project host's cookies (other projects' private-site sign-ins): dropped.
    res.setHeader('Clear-Site-Data', '"cache", "cookies"');
    // Cookies for every tenant's host (planted access cookie, fixed session) go nowhere; its own pass.
    res.setHeader('Set-Cookie', [
      'hoist_access=planted; Path=/p',
      'sid=fixed; Domain=apps.example; Path=/',
      'bomb=x; domain=.EXAMPLE',
      'dot=x; Domain=APPS.example.',
      'quoted=x; Domain="apps.example"',
      'theme=dark; Path=/; HttpOnly',
      'shop=1; Domain=shop.apps.example',
    ]);
  }
  // Its own cache and storage are the release's to clear.
  if (req.url === '/own') res.setHeader('Clear-Site-Data', '"cache", "storage"');
  res.statusCode = req.url === '/status' ? 418 : 200;
  res.setHeader('content-type', 'application/json').end(JSON.stringify(seen(req)));
});
release.on('upgrade', (req, socket) =>
  socket.end(
    `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n${JSON.stringify(seen(req))}`,
  ),
);

/**
 * An edge stand-in: every request goes through the release proxy with `options` (by `via`: http-proxy,
 * or node:http alone as the edge's hot path does for requests without a body), every upgrade through
 * its `ws`. The edge's own headers are `headers`; `to` is the release's address. Project hosts are under APPS.
 */
async function front(
  options: Omit<ForwardingOptions, 'appsDomain'>,
  via: 'web' | 'plain' = 'web',
  headers: Record<string, string> = {},
  to?: Extract<ReleaseTarget, { kind: 'http' }>,
) {
  const target = to ?? { kind: 'http' as const, url: `http://127.0.0.1:${(release.address() as AddressInfo).port}` };
  const proxy = createReleaseProxy({ ...options, appsDomain: APPS });
  const server = http.createServer((req, res) => proxy[via](req, res, target, headers));
  server.on('upgrade', (req, socket, head) => proxy.ws(req, socket, head, target, headers));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((r) => server.close(r)),
  };
}

const APPS = 'apps.example';

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

for (const via of ['web', 'plain'] as const) {
  test(
    `${via}: without trustProxy the edge sets X-Forwarded-For/-Host/-Proto/-Port itself and ` +
      'drops Forwarded and X-Real-IP',
    async () => {
      const f = await front({ trustProxy: false, appsScheme: 'http' }, via);
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
    `${via}: a request without any such header gets them all from the edge; the Host port or ` +
      "the scheme's default is the port",
    async () => {
      const f = await front({ trustProxy: false, appsScheme: 'http' }, via);
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
    `${via}: with appsScheme https (TLS ends in front of the edge) the edge says https, ` +
      'whatever the client claims',
    async () => {
      const f = await front({ trustProxy: false, appsScheme: 'https' }, via);
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

  test(
    `${via}: with trustProxy the proxy's values are kept and its address is appended to ` + 'X-Forwarded-For',
    async () => {
      const f = await front({ trustProxy: true, appsScheme: 'http' }, via);
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
    },
  );
}

/** The answer of `url` to a raw request: status line, headers (no Date) and body. */
async function answerOf(url: string, method: string, path: string, headers: Record<string, string>) {
  const conn = await rawRequest(url, method, path, headers);
  let data = '';
  await new Promise<void>((resolve) => conn.socket.on('data', (d) => (data += d)).on('close', () => resolve()));
  return data.replace(/^Date: .*\r\n/im, '').replace(/"port":\d+/, '"port":0');
}

test(
  'plain answers as web does: path, method, status and reason, headers over the edge ones, ' + 'HEAD, Trailer',
  async () => {
    const edgeHeaders = { 'x-hoist-release': 'dep-1', 'x-robots-tag': 'noindex' };
    const web = await front({ trustProxy: false, appsScheme: 'http' }, 'web', edgeHeaders);
    const plain = await front({ trustProxy: false, appsScheme: 'http' }, 'plain', edgeHeaders);
    try {
      const asks: [string, string, Record<string, string>][] = [
        ['GET', '/a/b/../c?x=1&y=%20"', { connection: 'close' }],
        ['GET', '/status', { connection: 'close' }],
        ['HEAD', '/', { connection: 'close' }],
        ['GET', '//double//slash?', { connection: 'close', trailer: 'x-check' }],
        ['GET', '/%7Euser/%2e%2E/x', { connection: 'close', 'x-forwarded-for': '6.6.6.6' }],
        ['GET', "/assets/a.b-1.js?v=1&w=%20&q=/?'", { connection: 'close' }],
        ['GET', '/a/.well-known/x?', { connection: 'close' }],
      ];
      for (const [method, path, headers] of asks) {
        // The port differs (X-Forwarded-Host, -Port, Host): each is asked with the same Host.
        const h = { host: 'site.localhost:8080', ...headers };
        const a = await answerOf(web.url, method, path, h);
        const b = await answerOf(plain.url, method, path, h);
        assert.is(b, a, `${method} ${path}`);
        assert.ok(!/"trailer"/.test(b), 'Trailer is not forwarded');
      }
      const teapot = await answerOf(plain.url, 'GET', '/status', { connection: 'close' });
      assert.match(teapot, /^HTTP\/1\.1 418 I am a teapot here\r\n/);
      assert.match(teapot, /\r\nx-hoist-release: the app says\r\n/i);
      assert.match(teapot, /\r\nx-robots-tag: noindex\r\n/i);
      assert.not.match(teapot, /x-robots-tag: all/i, "the edge's noindex wins over the release's");
      assert.equal(
        teapot.match(/^set-cookie: .*$/gim)?.map((l) => l.replace(/^set-cookie: /i, '').trim()),
        ['theme=dark; Path=/; HttpOnly', 'shop=1; Domain=shop.apps.example'],
        "cookies for other tenants' hosts and the access cookie are dropped",
      );
      for (const url of [web.url, plain.url]) {
        const via = url === web.url ? 'web' : 'plain';
        const status = await answerOf(url, 'GET', '/status', { connection: 'close' });
        assert.not.match(status, /x-accel|x-sendfile/i, `${via} drops instructions to a proxy in front`);
        assert.not.match(status, /clear-site-data/i, `${via} drops a Clear-Site-Data that clears cookies`);
        const own = await answerOf(url, 'GET', '/own', { connection: 'close' });
        assert.match(own, /\r\nclear-site-data: "cache", "storage"\r\n/i, `${via} keeps one that clears no cookie`);
      }
    } finally {
      await web.close();
      await plain.close();
    }
  },
);

test('plain keeps its connection to the release open between requests, and the client its own', async () => {
  const f = await front({ trustProxy: false, appsScheme: 'http' }, 'plain');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const edgeSides = new Set<number>();
    const clientSides = new Set<number>();
    for (let i = 0; i < 3; i++) {
      const res = await new Promise<{ body: string; port: number; connection?: string }>((resolve, reject) =>
        http
          .get(`${f.url}/`, { agent }, (r) => {
            const port = r.socket.localPort!;
            let body = '';
            r.on('data', (d) => (body += d)).on('end', () => resolve({ body, port, connection: r.headers.connection }));
          })
          .on('error', reject),
      );
      assert.is(res.connection, 'keep-alive');
      clientSides.add(res.port);
      edgeSides.add(JSON.parse(res.body).port);
    }
    assert.is(clientSides.size, 1, "the client's connection is kept");
    assert.is(edgeSides.size, 1, 'the connection to the release is kept');
  } finally {
    agent.destroy();
    await f.close();
  }
});

test('plain streams a large answer to a slow client whole, holding the release back meanwhile', async () => {
  const f = await front({ trustProxy: false, appsScheme: 'http' }, 'plain');
  try {
    const body = await new Promise<Buffer>((resolve, reject) =>
      http
        .get(`${f.url}/big`, (r) => {
          const chunks: Buffer[] = [];
          r.pause();
          setTimeout(() => r.resume(), 300);
          r.on('data', (d: Buffer) => chunks.push(d)).on('end', () => resolve(Buffer.concat(chunks)));
        })
        .on('error', reject),
    );
    assert.is(body.length, BIG.length);
    assert.ok(body.equals(BIG), "the bytes are the release's");
  } finally {
    await f.close();
  }
});

test('web and plain cut the connection of a client whose answer the release cuts, rather than hang', async () => {
  for (const via of ['web', 'plain'] as const) {
    const f = await front({ trustProxy: false, appsScheme: 'http' }, via);
    try {
      const seenByClient = await new Promise<string>((resolve) =>
        http
          .get(`${f.url}/cut`, (r) => {
            let body = '';
            r.on('data', (d) => (body += d)).on('error', (e) => resolve(`${r.statusCode} ${body} ${e.message}`));
          })
          .on('error', (e) => resolve(e.message)),
      );
      assert.is(seenByClient, '200 a start aborted', via);
    } finally {
      await f.close();
    }
  }
});

test('web and plain answer 502 with the edge page when the release is gone', async () => {
  const dead = `http://127.0.0.1:${await new Promise<number>((resolve) => {
    const s = http.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  })}`;
  for (const via of ['web', 'plain'] as const) {
    const to = { kind: 'http' as const, url: dead };
    const f = await front({ trustProxy: false, appsScheme: 'http' }, via, { 'x-hoist-release': 'dep-1' }, to);
    try {
      const res = await (await rawRequest(f.url, 'GET', '/', { connection: 'close' })).response;
      assert.is(res.status, 502, via);
      assert.is(res.headers['content-type'], 'text/html; charset=utf-8');
      assert.is(res.headers['cache-control'], 'no-store');
      assert.match(String(res.body), /<html/i);
    } finally {
      await f.close();
    }
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

test('a release with a unix socket is reached through it, not its address: web, plain and upgrades', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hoist-proxy-socket-'));
  const socket = join(dir, 'http.sock');
  // The same release on a socket; the address given beside it answers nothing.
  const onSocket = http.createServer((req, res) => release.emit('request', req, res));
  onSocket.on('upgrade', (req, sock, head) => release.emit('upgrade', req, sock, head));
  await new Promise<void>((r) => onSocket.listen(socket, r));
  const nowhere = { kind: 'http' as const, url: 'http://127.0.0.1:9', socket };
  try {
    for (const via of ['web', 'plain'] as const) {
      const f = await front({ trustProxy: false, appsScheme: 'http' }, via, {}, nowhere);
      try {
        const res = await (await rawRequest(f.url, 'GET', '/page?x=1', { connection: 'close' })).response;
        assert.is(res.status, 200, via);
        const got = res.body;
        assert.is(got.url, '/page?x=1', via);
        assert.is(got.headers['x-forwarded-for'], '127.0.0.1', via);
        if (via === 'web') {
          const conn = await rawRequest(f.url, 'GET', '/socket', {
            connection: 'Upgrade',
            upgrade: 'websocket',
            'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
            'sec-websocket-version': '13',
          });
          let data = '';
          await new Promise<void>((r) => conn.socket.on('data', (d) => (data += d)).on('close', () => r()));
          assert.match(data, /^HTTP\/1\.1 101/);
          assert.is(JSON.parse(data.slice(data.indexOf('\r\n\r\n') + 4)).url, '/socket');
        }
      } finally {
        await f.close();
      }
    }
  } finally {
    await new Promise((r) => onSocket.close(r));
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
