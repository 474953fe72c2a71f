import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createReleaseProxy } from '../../../adapters/edge/proxy.js';
import { rawRequest, type RawConnection } from '../../helpers/raw-http.js';

// Hostile visitors and apps behind the release proxy: none of them may end the edge's process, hang a visitor, grow
// the edge's memory or get past the header rules. The release writes raw bytes: `/ctl` a reason phrase with a
// control character, `/flood` a plain answer to an Upgrade whose body never ends, `/ws` a 101 with cookies for every
// tenant, a proxy instruction and its own X-Robots-Tag, then echoes what it gets; `/ok` an ordinary answer.
const APPS = 'apps.example';
const EDGE_HEADERS = { 'x-hoist-release': 'dep-1', 'x-robots-tag': 'noindex' };
const WS_HEADERS = {
  connection: 'Upgrade',
  upgrade: 'websocket',
  'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
  'sec-websocket-version': '13',
};
const ANSWERS: Record<string, string> = {
  '/ok': 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok',
  '/ctl': 'HTTP/1.1 200 O\x01K\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok',
  '/early':
    'HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n' +
    'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok',
  '/switch': 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
  '/flood':
    'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nSet-Cookie: sid=fixed; Domain=apps.example\r\n' +
    'X-Accel-Redirect: /internal\r\n\r\n',
  '/ws':
    'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
    'Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSet-Cookie: hoist_access=planted; Path=/\r\n' +
    'Set-Cookie: sid=fixed; Domain=.APPS.example; Path=/\r\nSet-Cookie: theme=dark; Path=/\r\n' +
    'X-Accel-Redirect: /internal/admin\r\nX-Robots-Tag: all\r\n\r\n',
};

/** The release's connections, each with whether it is closed yet. */
const conns: { path: string; closed: Promise<void> }[] = [];
const sockets = new Set<net.Socket>();
const release = net.createServer((sock) => {
  sockets.add(sock);
  sock.on('error', () => {});
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  sock.once('data', (d) => {
    const path = d.toString('latin1').split(' ')[1];
    conns.push({ path, closed });
    sock.write(Buffer.from(ANSWERS[path] ?? ANSWERS['/ok'], 'latin1'));
    if (path === '/ws' || path === '/switch') return void sock.pipe(sock);
    if (path !== '/flood') return void sock.end();
    // A body that never ends, written as fast as the edge takes it.
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const flood = () => {
      while (!sock.destroyed && sock.write(chunk));
    };
    sock.on('drain', flood);
    flood();
  });
});

/** An edge stand-in: requests through the proxy's `via`, upgrades through its `ws`, the edge's headers EDGE_HEADERS. */
async function front(via: 'web' | 'plain' = 'web') {
  const target = { kind: 'http' as const, url: `http://127.0.0.1:${(release.address() as AddressInfo).port}` };
  const proxy = createReleaseProxy({ trustProxy: false, appsScheme: 'http', appsDomain: APPS });
  const server = http.createServer((req, res) => proxy[via](req, res, target, EDGE_HEADERS));
  const upgraded = new Set<Duplex>();
  server.on('upgrade', (req, socket, head) => {
    upgraded.add(socket);
    proxy.ws(req, socket, head, target, EDGE_HEADERS);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      for (const s of upgraded) s.destroy();
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}

/** `promise`, or a failure naming `what` after `ms`. */
async function within<T>(promise: Promise<T>, what: string, ms = 3000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether the edge at `url` still answers an ordinary request. */
async function serves(url: string) {
  const res = await within((await rawRequest(url, 'GET', '/ok', { connection: 'close' })).response, 'an ordinary GET');
  assert.is(res.status, 200, 'the edge keeps serving');
  assert.is(res.body, 'ok');
}

/** The head of what `conn` got, once a blank line ends it; and what came after it so far. */
async function headOf(conn: RawConnection): Promise<{ head: string; rest: () => string }> {
  let data = '';
  conn.socket.on('data', (d: Buffer) => (data += d.toString('latin1')));
  await within(
    new Promise<void>((resolve) => {
      const check = () => data.includes('\r\n\r\n') && resolve();
      conn.socket.on('data', check).on('close', () => resolve());
      check();
    }),
    'an answer',
  );
  const end = data.indexOf('\r\n\r\n');
  return { head: data.slice(0, end), rest: () => data.slice(end + 4) };
}

test.before(() => new Promise<void>((r) => release.listen(0, '127.0.0.1', r)));
test.after(() => {
  for (const s of sockets) s.destroy();
  return new Promise<void>((r) => release.close(() => r()));
});

test('a visitor that resets its WebSocket connection, open or not yet answered, leaves the edge serving', async () => {
  const f = await front();
  try {
    const open = await rawRequest(f.url, 'GET', '/ws', WS_HEADERS);
    assert.match((await headOf(open)).head, /^HTTP\/1\.1 101 /);
    open.socket.resetAndDestroy();
    // Reset before the release answered.
    (await rawRequest(f.url, 'GET', '/ws', WS_HEADERS)).socket.resetAndDestroy();
    await new Promise((r) => setTimeout(r, 200));
    await within(Promise.all(conns.filter((c) => c.path === '/ws').map((c) => c.closed)), "the app's sockets close");
    await serves(f.url);
  } finally {
    await f.close();
  }
});

test('a reason phrase with a control character: the standard one, on web and plain; the edge serves on', async () => {
  for (const via of ['web', 'plain'] as const) {
    const f = await front(via);
    try {
      // web takes requests with a body (http-proxy); plain those without (undici).
      const conn =
        via === 'web'
          ? await rawRequest(f.url, 'POST', '/ctl', { 'content-length': 1, connection: 'close' })
          : await rawRequest(f.url, 'GET', '/ctl', { connection: 'close' });
      if (via === 'web') await conn.write('x');
      const { head, rest } = await headOf(conn);
      assert.match(head, /^HTTP\/1\.1 200 OK\r\n/, via);
      assert.not.match(head, /\x01/, via);
      await within(new Promise((r) => conn.socket.once('close', r)), `${via}: the answer's end`);
      assert.is(rest(), 'ok', via);
      await serves(f.url);
    } finally {
      await f.close();
    }
  }
});

test(
  "an app's plain answer to an Upgrade, with a body that never ends: a visitor that does not read gets 502, " +
    "the app's connection is closed",
  async () => {
    const f = await front();
    try {
      const conn = await rawRequest(f.url, 'GET', '/flood', WS_HEADERS);
      conn.socket.pause();
      await within(
        (async () => {
          while (!conns.some((c) => c.path === '/flood')) await new Promise((r) => setTimeout(r, 10));
        })(),
        'the upgrade reaching the app',
      );
      // The edge buffers none of it: it closes the app's connection rather than read on.
      await within(conns.find((c) => c.path === '/flood')!.closed, "the app's connection closing");
      conn.socket.resume();
      const { head, rest } = await headOf(conn);
      assert.match(head, /^HTTP\/1\.1 502 /);
      assert.not.match(head, /set-cookie|x-accel/i, "nothing of the app's answer");
      await within(new Promise((r) => conn.socket.once('close', r)), "the visitor's connection closing");
      assert.ok(rest().length < 200, 'a short body');
      await serves(f.url);
    } finally {
      await f.close();
    }
  },
);

test(
  "a 101 answer gets the header rules: no cookie for other tenants' hosts or the access cookie, no proxy " +
    "instruction, the edge's own headers",
  async () => {
    const f = await front();
    try {
      const conn = await rawRequest(f.url, 'GET', '/ws', WS_HEADERS);
      const { head, rest } = await headOf(conn);
      assert.match(head, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
      assert.match(head, /\r\nupgrade: websocket(\r\n|$)/i);
      assert.match(head, /\r\nsec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=(\r\n|$)/i);
      assert.equal(
        head.match(/^set-cookie: .*$/gim)?.map((l) => l.replace(/^set-cookie: /i, '')),
        ['theme=dark; Path=/'],
        "cookies for other tenants' hosts and the access cookie are dropped",
      );
      assert.not.match(head, /x-accel/i);
      assert.match(head, /\r\nx-hoist-release: dep-1(\r\n|$)/i);
      assert.equal(head.match(/^x-robots-tag: .*$/gim), ['x-robots-tag: noindex'], "the edge's noindex wins");
      // And the connection is the app's, both ways.
      await conn.write('ping');
      await within(
        (async () => {
          while (rest() !== 'ping') await new Promise((r) => setTimeout(r, 10));
        })(),
        'the echo',
      );
    } finally {
      await f.close();
    }
  },
);

test('an informational answer before the real one, or a 101 to a request asking none: clean answers', async () => {
  for (const via of ['web', 'plain'] as const) {
    const f = await front(via);
    try {
      const send = async (path: string) => {
        const conn =
          via === 'web'
            ? await rawRequest(f.url, 'POST', path, { 'content-length': 1, connection: 'close' })
            : await rawRequest(f.url, 'GET', path, { connection: 'close' });
        if (via === 'web') await conn.write('x');
        return conn;
      };
      const early = await send('/early');
      const { head, rest } = await headOf(early);
      const final = head.slice(head.lastIndexOf('HTTP/1.1 '));
      assert.match(final, /^HTTP\/1\.1 200 /, `${via}: ${head}`);
      await within(new Promise((r) => early.socket.once('close', r)), `${via}: the answer's end`);
      assert.match(rest(), /ok$/, via);
      const { head: switched } = await headOf(await send('/switch'));
      assert.match(switched, /^HTTP\/1\.1 502 /, `${via}: ${switched}`);
      await serves(f.url);
    } finally {
      await f.close();
    }
  }
});

test("a visitor that leaves a WebSocket whose app never closes or writes: the edge's sockets go", async () => {
  // allowHalfOpen: the app keeps its side open after the edge's FIN and stays silent, as a hostile one would.
  const held = new Set<net.Socket>();
  const deaf = net.createServer({ allowHalfOpen: true }, (sock) => {
    held.add(sock);
    sock.on('error', () => {});
    sock.once('data', () => sock.write(Buffer.from(ANSWERS['/ws'], 'latin1')));
  });
  await new Promise<void>((r) => deaf.listen(0, '127.0.0.1', r));
  const target = { kind: 'http' as const, url: `http://127.0.0.1:${(deaf.address() as AddressInfo).port}` };
  const proxy = createReleaseProxy({ trustProxy: false, appsScheme: 'http', appsDomain: APPS });
  const edge = http.createServer(() => {});
  const visitorSide: Promise<void>[] = [];
  edge.on('upgrade', (req, socket, head) => {
    visitorSide.push(new Promise((r) => socket.once('close', () => r())));
    proxy.ws(req, socket, head, target, EDGE_HEADERS);
  });
  await new Promise<void>((r) => edge.listen(0, '127.0.0.1', r));
  // Open TCP sockets of this process: the edge's two of the connection, and the app's one.
  const sockets = () =>
    (process as unknown as { _getActiveHandles(): unknown[] })
      ._getActiveHandles()
      .filter((h) => h instanceof net.Socket).length;
  try {
    const before = sockets();
    const conn = await rawRequest(`http://127.0.0.1:${(edge.address() as AddressInfo).port}`, 'GET', '/ws', WS_HEADERS);
    assert.match((await headOf(conn)).head, /^HTTP\/1\.1 101 /);
    conn.socket.end();
    // Closed by the edge once the app kept its side open HALF_CLOSED_MS (5 s) after the visitor's end.
    await within(new Promise((r) => conn.socket.once('close', r)), 'the visitor leaving', 10_000);
    await within(Promise.all(visitorSide), "the edge's socket to the visitor closing", 10_000);
    const end = Date.now() + 8000;
    while (sockets() > before + 1 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    assert.ok(sockets() <= before + 1, "at most the app's own socket is left: the edge's to the app is gone");
  } finally {
    for (const s of held) s.destroy();
    await new Promise((r) => edge.close(r));
    await new Promise((r) => deaf.close(r));
  }
});

test('an upgrade with a body is 400 and reaches no app', async () => {
  const f = await front();
  try {
    const before = conns.length;
    for (const extra of [{ 'content-length': 60 }, { 'transfer-encoding': 'chunked' }] as Record<
      string,
      string | number
    >[]) {
      const conn = await rawRequest(f.url, 'GET', '/ws', { ...WS_HEADERS, ...extra });
      assert.match((await headOf(conn)).head, /^HTTP\/1\.1 400 /, JSON.stringify(extra));
    }
    assert.is(conns.length, before, 'nothing was forwarded');
    await serves(f.url);
  } finally {
    await f.close();
  }
});

test.run();
