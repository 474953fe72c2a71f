// Slow clients on raw sockets, with short configured limits so the tests are fast: headers that
// dribble, bodies below the minimum rate (uploads, the upload URL, JSON, bodies the edge forwards),
// idle kept-alive connections, and the cap on connections per address. Each refused client gets a
// clear answer and nothing it sent half-way is kept, except what tus keeps by design.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { FastifyInstance } from 'fastify';
import { buildApi } from '../../../adapters/http/app.js';
import { buildEdge } from '../../../adapters/edge/edge.js';
import { addressKey } from '../../../core/auth/address-key.js';
import type { Kernel } from '../../../adapters/kernel.js';
import type { HoistConfig } from '../../../config/schema.js';
import { ACCOUNT_SERVICE, type AccountService } from '../../../core/accounts/account-service.js';
import { Deployment } from '../../../core/entities/deployment.js';
import { Project } from '../../../core/entities/project.js';
import { routesChanged } from '../../../core/deployments/host-routes.js';
import { CHANGE_FEED } from '../../../core/ports/change-feed.js';
import { RequestContext } from '@mikro-orm/core';
import { zipOf } from '../../helpers/live.js';
import { footprint, Form } from '../../helpers/raw-http.js';
import { testKernel } from '../../helpers/kernel.js';

const LIMITS: Partial<HoistConfig> = {
  headersTimeoutMs: 400,
  minBodyBytesPerSecond: 1024,
  bodyRateWindowMs: 600,
  keepAliveTimeoutMs: 300,
  maxConnectionsPerAddress: 6,
};

interface Served {
  kernel: Kernel;
  api: string;
  edge: string;
  token: string;
  close(): Promise<void>;
}

async function serve(overrides: Partial<HoistConfig> = {}): Promise<Served> {
  const kernel = await testKernel({ ...LIMITS, ...overrides });
  const api = await buildApi(kernel);
  const edge = await buildEdge(kernel);
  const apiUrl = await api.listen({ port: 0, host: '127.0.0.1' });
  const edgeUrl = await edge.listen({ port: 0, host: '127.0.0.1' });
  const email = `slow-${process.pid}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  await RequestContext.create(kernel.orm.em.fork(), () =>
    kernel.get<AccountService>(ACCOUNT_SERVICE).create({ email, password: 'correct horse battery', plan: 'team' }),
  );
  const login = await fetch(`${apiUrl}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: 'correct horse battery' }),
  });
  const { token } = await login.json();
  return {
    kernel,
    api: apiUrl,
    edge: edgeUrl,
    token,
    async close() {
      for (const app of [api, edge] as FastifyInstance[]) await app.close();
      await kernel.stop();
    },
  };
}

/** A raw connection that records what comes back and when the server closed it. */
interface Conn {
  socket: net.Socket;
  /** Settles when the server closes the connection: everything it sent, and the time since open. */
  closed: Promise<{ data: string; ms: number }>;
  /** Writes `chunk` every `everyMs` until `count` writes or the connection closes. */
  dribble(chunk: string | Buffer, everyMs: number, count?: number): Promise<void>;
}

async function open(base: string): Promise<Conn> {
  const url = new URL(base);
  const socket = net.connect(Number(url.port), url.hostname);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const began = Date.now();
  let data = '';
  socket.on('data', (d) => (data += d));
  socket.on('error', () => {});
  const closed = new Promise<{ data: string; ms: number }>((resolve) =>
    socket.on('close', () => resolve({ data, ms: Date.now() - began })),
  );
  return {
    socket,
    closed,
    async dribble(chunk, everyMs, count = Infinity) {
      for (let i = 0; i < count && !socket.destroyed && socket.writable; i++) {
        socket.write(chunk);
        await new Promise((r) => setTimeout(r, everyMs));
      }
    },
  };
}

/** The status and the body (JSON when it parses) of the first answer in `data`. */
function answerOf(data: string): { status: number; headers: Record<string, string>; body: any } {
  const end = data.indexOf('\r\n\r\n');
  assert.ok(end > 0, `an HTTP answer: ${JSON.stringify(data.slice(0, 200))}`);
  const [statusLine, ...lines] = data.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  const text = data.slice(end + 4);
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

let s: Served;
test.before(async () => {
  s = await serve();
});
test.after(async () => s?.close());

const auth = () => ({ authorization: `Bearer ${s.token}` });

test(
  'headers sent a byte at a time are cut at the headers timeout with 408 ' +
    'request_timeout; other clients are served meanwhile',
  async () => {
    for (const base of [s.api, s.edge]) {
      const c = await open(base);
      const head = `GET /api/v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\n\r\n`;
      void c.dribble(head.slice(0, 60), 0, 1).then(() => c.dribble('x', 50));
      // Meanwhile a normal client is answered at once.
      const me = await fetch(`${s.api}/api/v1/me`, { headers: auth() });
      assert.is(me.status, 200);
      const { data, ms } = await c.closed;
      assert.ok(ms < 2000, `cut after ${ms} ms`);
      const res = answerOf(data);
      assert.is(res.status, 408, base);
      assert.is(res.headers.connection, 'close');
      if (base === s.api) {
        assert.is(res.body.error.code, 'request_timeout');
        assert.match(res.body.error.message, /headers must arrive within 0.4 s/);
        assert.match(res.body.error.request_id, /^req_/);
      } else {
        assert.match(res.headers['content-type'], /^text\/plain/);
        assert.match(res.body, /headers must arrive within 0.4 s/);
      }
    }
  },
);

test('a connection that sends nothing is closed with 408 at the headers timeout', async () => {
  for (const base of [s.api, s.edge]) {
    const c = await open(base);
    const { data, ms } = await c.closed;
    assert.ok(ms < 2000, `closed after ${ms} ms`);
    assert.is(answerOf(data).status, 408);
  }
});

test(
  'a Local-to-Live upload below the minimum body rate gets 408 request_timeout, ' +
    'keeps nothing, and the same upload sent at speed goes through',
  async () => {
    const before = await footprint(s.kernel);
    const form = new Form();
    const zip = await zipOf({ 'index.html': `<h1>slow</h1>${'x'.repeat(4000)}` });
    const body = form.body([
      ['name', 'slow-site'],
      ['file', zip, 'site.zip'],
    ]);
    const c = await open(s.api);
    c.socket.write(
      `POST /api/v1/local-to-live HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ` +
        `${s.token}\r\nContent-Type: ${form.contentType}\r\nContent-Length: ` +
        `${body.length}\r\n\r\n`,
    );
    // The text part and the start of the file arrive at once, then 10 bytes every 100 ms (100 bytes/s).
    c.socket.write(body.subarray(0, 300));
    let sent = 300;
    const drip = (async () => {
      while (!c.socket.destroyed && sent < body.length - 10) {
        c.socket.write(body.subarray(sent, sent + 10));
        sent += 10;
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const { data, ms } = await c.closed;
    await drip;
    assert.ok(ms < 3000, `cut after ${ms} ms`);
    assert.ok(sent < body.length - 10, 'cut before the body was whole');
    const res = answerOf(data);
    assert.is(res.status, 408, data);
    assert.is(res.body.error.code, 'request_timeout');
    assert.match(
      res.body.error.message,
      /body came too slowly: \d+ bytes in the last [\d.]+ s, below the minimum of 1024 bytes\/s averaged over 0.6 s/,
    );
    assert.is(res.body.error.details.min_bytes_per_second, 1024);
    assert.is(res.body.error.details.window_seconds, 0.6);
    assert.is(res.headers.connection, 'close');
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(await footprint(s.kernel), before, 'no upload, temporary file, version, operation or project is left');

    // The same request at speed.
    const fast = await fetch(`${s.api}/api/v1/local-to-live`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': form.contentType },
      body: new Uint8Array(body),
    });
    const fastBody = await fast.json();
    assert.is(fast.status, 202, JSON.stringify(fastBody));
    assert.is(fastBody.project.name, 'slow-site');
  },
);

test('a body that keeps above the minimum rate over several windows is never cut', async () => {
  const form = new Form();
  const zip = await zipOf({ 'index.html': '<h1>steady</h1>', 'pad.bin': randomBytes(60_000) });
  const body = form.body([
    ['name', 'steady-site'],
    ['file', zip, 'site.zip'],
  ]);
  const c = await open(s.api);
  c.socket.write(
    `POST /api/v1/local-to-live HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ` +
      `${s.token}\r\nContent-Type: ${form.contentType}\r\nContent-Length: ` +
      `${body.length}\r\nConnection: close\r\n\r\n`,
  );
  // 2,000 bytes every 100 ms: 20 KB/s for about three seconds, five windows.
  for (let sent = 0; sent < body.length; sent += 2000) {
    c.socket.write(body.subarray(sent, sent + 2000));
    await new Promise((r) => setTimeout(r, 100));
  }
  const res = answerOf((await c.closed).data);
  assert.is(res.status, 202, JSON.stringify(res.body));
});

test('a JSON body dribbled below the rate gets 408 request_timeout and changes nothing', async () => {
  const c = await open(s.api);
  const json = JSON.stringify({ name: 'Renamed by a slow client' });
  c.socket.write(
    `PATCH /api/v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ` +
      `${s.token}\r\nContent-Type: application/json\r\nContent-Length: ` +
      `${json.length}\r\n\r\n`,
  );
  void c.dribble(json.slice(0, json.length - 1), 0, 1);
  const { data } = await c.closed;
  const res = answerOf(data);
  assert.is(res.status, 408, data);
  assert.is(res.body.error.code, 'request_timeout');
  const me = await (await fetch(`${s.api}/api/v1/me`, { headers: auth() })).json();
  assert.not.match(JSON.stringify(me), /slow client/);
});

test(
  'a resumable (tus) PATCH below the rate gets 408 with the Upload-Offset of the ' +
    'bytes kept; the upload goes on from there',
  async () => {
    const zip = await zipOf({ 'index.html': '<h1>resumed</h1>', 'pad.bin': randomBytes(3000) });
    const created = await fetch(`${s.api}/api/v1/upload-sessions`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'tus-slow', transport: 'direct_storage_resumable', size: zip.length }),
    });
    const session = await created.json();
    assert.is(created.status, 201, JSON.stringify(session));
    const path = new URL(session.upload_url).pathname;
    const c = await open(s.api);
    c.socket.write(
      `PATCH ${path} HTTP/1.1\r\nHost: x\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: ` +
        `0\r\nContent-Type: application/offset+octet-stream\r\nContent-Length: ` +
        `${zip.length}\r\n\r\n`,
    );
    c.socket.write(zip.subarray(0, 1000));
    void c.dribble(zip.subarray(1000, 1001), 200, 20);
    const res = answerOf((await c.closed).data);
    assert.is(res.status, 408, JSON.stringify(res));
    assert.is(res.body.error.code, 'request_timeout');
    const kept = Number(res.headers['upload-offset']);
    assert.ok(kept >= 1000 && kept < zip.length, `kept ${kept}`);
    const head = await fetch(`${s.api}${path}`, { method: 'HEAD', headers: { 'tus-resumable': '1.0.0' } });
    assert.is(head.headers.get('upload-offset'), String(kept));
    const rest = await fetch(`${s.api}${path}`, {
      method: 'PATCH',
      headers: {
        'tus-resumable': '1.0.0',
        'upload-offset': String(kept),
        'content-type': 'application/offset+octet-stream',
      },
      body: new Uint8Array(zip.subarray(kept)),
    });
    assert.is(rest.status, 202, await rest.clone().text());
  },
);

test('an idle kept-alive connection is closed after the keep-alive timeout', async () => {
  for (const base of [s.api, s.edge]) {
    const c = await open(base);
    c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const { data, ms } = await c.closed;
    assert.match(data, /^HTTP\/1\.1 (200|404)/, base);
    assert.ok(ms >= 250 && ms < 1500, `closed after ${ms} ms`);
  }
});

test(
  'the connections of one address are capped on the API and the edge: the next gets ' +
    '429 rate_limited; a freed slot is usable again',
  async () => {
    // Longer timeouts here, so the held connections live through the test.
    const t = await serve({ headersTimeoutMs: 10_000, keepAliveTimeoutMs: 10_000, maxConnectionsPerAddress: 3 });
    try {
      for (const base of [t.api, t.edge]) {
        const held = await Promise.all([open(base), open(base), open(base)]);
        const refused = await open(base);
        const { data, ms } = await refused.closed;
        assert.ok(ms < 1500, `refused after ${ms} ms`);
        const res = answerOf(data);
        assert.is(res.status, 429, data);
        assert.is(res.headers['retry-after'], '1');
        if (base === t.api) {
          assert.is(res.body.error.code, 'rate_limited');
          assert.is(res.body.error.details.limit, 3);
          assert.match(res.body.error.message, /Too many open connections from your address: at most 3/);
        } else assert.match(res.body, /Too many open connections/);
        // The held ones are served as usual.
        held[0].socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
        assert.match((await held[0].closed).data, /^HTTP\/1\.1 (200|404)/);
        // One closed: a new connection is admitted.
        const again = await open(base);
        again.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
        assert.match((await again.closed).data, /^HTTP\/1\.1 (200|404)/);
        for (const c of held) c.socket.destroy();
        await Promise.all(held.map((c) => c.closed));
      }
    } finally {
      await t.close();
    }
  },
);

test('with trustProxy the cap is not applied (every connection comes from the proxy)', async () => {
  const t = await serve({
    headersTimeoutMs: 10_000,
    keepAliveTimeoutMs: 10_000,
    maxConnectionsPerAddress: 2,
    trustProxy: true,
  });
  try {
    const held = await Promise.all([open(t.api), open(t.api), open(t.api)]);
    held[2].socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.match((await held[2].closed).data, /^HTTP\/1\.1 200/);
    for (const c of held) c.socket.destroy();
  } finally {
    await t.close();
  }
});

test(
  'a body the edge forwards to an app below the rate: 408 on the edge, and the ' + "app's request is dropped",
  async () => {
    // An app that records what it received and whether its request ended whole or was aborted.
    const log: { url: string; bytes: number; outcome: string }[] = [];
    const app = http.createServer((req, res) => {
      const entry = { url: req.url!, bytes: 0, outcome: 'pending' };
      log.push(entry);
      req.on('data', (d) => (entry.bytes += d.length));
      req.on('end', () => {
        entry.outcome = 'whole';
        res.end('ok');
      });
      req.on('close', () => {
        if (entry.outcome === 'pending') entry.outcome = 'aborted';
      });
    });
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    try {
      const created = await fetch(`${s.api}/api/v1/projects/`, {
        method: 'POST',
        headers: { ...auth(), 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'app-behind-edge', visibility: 'public' }),
      });
      const project = await created.json();
      assert.is(created.status, 201, JSON.stringify(project));
      // A live release whose target is the app above.
      const em = s.kernel.orm.em.fork();
      const d = Object.assign(new Deployment(), {
        accountId: (await em.findOneOrFail(Project, { id: project.id })).accountId,
        projectId: project.id,
        versionId: project.id,
        buildId: project.id,
        operationId: project.id,
        status: 'live',
        target: { kind: 'http', url: `http://127.0.0.1:${(app.address() as AddressInfo).port}` },
        createdAt: new Date(),
      });
      await em.persistAndFlush(d);
      await em.nativeUpdate(Project, { id: project.id }, { liveDeploymentId: d.id });
      // Written here, not by the Deploy stage: announced to the edge's routing table as the stage does.
      await routesChanged(s.kernel.get(CHANGE_FEED), project.id);
      const host = `${project.slug}.localhost`;

      const c = await open(s.edge);
      c.socket.write(
        `POST /slow HTTP/1.1\r\nHost: ${host}\r\nContent-Type: ` +
          `text/plain\r\nContent-Length: 5000\r\n\r\n${'a'.repeat(500)}`,
      );
      void c.dribble('a', 100, 40);
      const res = answerOf((await c.closed).data);
      assert.is(res.status, 408, JSON.stringify(res));
      assert.match(res.body, /body came too slowly/);
      await new Promise((r) => setTimeout(r, 200));
      assert.is(log.length, 1);
      assert.is(log[0].outcome, 'aborted', 'the app does not wait for the rest');

      // A body sent at speed reaches the app whole.
      const fast = await new Promise<number>((resolve, reject) => {
        const url = new URL(s.edge);
        const req = http.request(
          {
            host: url.hostname,
            port: url.port,
            method: 'POST',
            path: '/fast',
            headers: { host, 'content-type': 'text/plain' },
          },
          (r) => {
            r.resume();
            r.on('end', () => resolve(r.statusCode!));
          },
        );
        req.on('error', reject);
        req.end('b'.repeat(5000));
      });
      assert.is(fast, 200);
      assert.equal(log[1], { url: '/fast', bytes: 5000, outcome: 'whole' });
    } finally {
      await new Promise((r) => app.close(r));
    }
  },
);

test('addresses are counted by IPv4 address and by IPv6 /64', () => {
  assert.is(addressKey('203.0.113.7'), '203.0.113.7');
  assert.is(addressKey('::ffff:203.0.113.7'), '203.0.113.7');
  assert.is(addressKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  assert.is(addressKey('2001:db8:1:2:bbbb:cccc:dddd:eeee'), '2001:db8:1:2::/64');
  assert.is(addressKey('2001:db8::1'), '2001:db8:0:0::/64');
  assert.is(addressKey('::1'), '0:0:0:0::/64');
  assert.is(addressKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
});

test.run();
