import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { WebhookSendError, type WebhookSender } from '../../core/ports/webhook-sender.js';

/** Options for a fresh sender: whether it may post to private addresses, and the time it allows a post. */
export interface SenderOptions {
  privateAddresses: boolean;
  timeoutMs: number;
}

/** A sender under test. */
export interface WebhookSenderUnderTest {
  sender: WebhookSender;
  cleanup(): Promise<void>;
}

/** A receiver on loopback that records what reaches it and answers as `answer` says. */
async function receiver(answer: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void) {
  const seen: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
  let connections = 0;
  const server = http.createServer((req, res) => {
    let body = '';
    req
      .on('data', (d) => (body += d))
      .on('end', () => {
        seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
        answer(req, res, body);
      });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    seen,
    connections: () => connections,
    close: () => new Promise<void>((r) => server.close(() => r(server.closeAllConnections()))),
  };
}

/** Rejects with a WebhookSendError for `reason`, naming no header and no body. */
async function refused(post: Promise<unknown>, reason: string, secret: string): Promise<WebhookSendError> {
  const err = await post.then(
    (): WebhookSendError => assert.unreachable('it resolved') as never,
    (e: unknown) => e as WebhookSendError,
  );
  assert.instance(err, WebhookSendError, String(err));
  assert.is(err.reason, reason, err.message);
  assert.not.ok(err.message.includes(secret), 'the message holds no header or body');
  return err;
}

/**
 * The WebhookSender contract every sender plugin passes: a post reaches its URL with its headers and body and
 * resolves the answer's status (any status, no redirect followed); an answer too slow fails as timeout, a closed port
 * as connect; and, unless private addresses are allowed, no loopback, private, link-local or mapped address is
 * connected to, written in the URL or reached through a name (`localhost`).
 */
export function webhookSenderContract(name: string, fresh: (o: SenderOptions) => Promise<WebhookSenderUnderTest>) {
  const t = suite(`webhook sender contract: ${name}`);
  const open = { privateAddresses: true, timeoutMs: 5_000 };
  const SECRET = 'v1,signature-that-must-not-leak';
  const request = (url: string) => ({
    url,
    headers: { 'content-type': 'application/json', 'webhook-signature': SECRET },
    body: JSON.stringify({ type: 'ping', secret: SECRET }),
  });

  t('a post reaches its URL with its headers and body, and resolves the status; any status', async () => {
    const r = await receiver((req, res) => res.writeHead(req.url === '/teapot' ? 418 : 204).end());
    const { sender, cleanup } = await fresh(open);
    try {
      assert.equal(await sender.post(request(`http://127.0.0.1:${r.port}/hook?x=1`)), { status: 204 });
      assert.equal(await sender.post(request(`http://localhost:${r.port}/teapot`)), { status: 418 });
      assert.is(r.seen[0].method, 'POST');
      assert.is(r.seen[0].url, '/hook?x=1');
      assert.is(r.seen[0].headers['webhook-signature'], SECRET);
      assert.is(r.seen[0].headers['content-type'], 'application/json');
      assert.equal(JSON.parse(r.seen[0].body), { type: 'ping', secret: SECRET });
    } finally {
      await cleanup();
      await r.close();
    }
  });

  t('a redirect is answered, not followed', async () => {
    const r = await receiver((req, res) =>
      req.url === '/moved' ? res.writeHead(307, { location: '/elsewhere' }).end() : res.writeHead(200).end(),
    );
    const { sender, cleanup } = await fresh(open);
    try {
      assert.equal(await sender.post(request(`http://127.0.0.1:${r.port}/moved`)), { status: 307 });
      assert.equal(
        r.seen.map((s) => s.url),
        ['/moved'],
      );
    } finally {
      await cleanup();
      await r.close();
    }
  });

  t('no answer in time fails as timeout; a closed port as connect; an unknown name as dns', async () => {
    const r = await receiver(() => undefined);
    const { sender, cleanup } = await fresh({ privateAddresses: true, timeoutMs: 300 });
    const closed = await receiver(() => undefined);
    await closed.close();
    try {
      const started = performance.now();
      await refused(sender.post(request(`http://127.0.0.1:${r.port}/`)), 'timeout', SECRET);
      assert.ok(performance.now() - started < 4_000, 'it gave up near its time allowed');
      await refused(sender.post(request(`http://127.0.0.1:${closed.port}/`)), 'connect', SECRET);
      await refused(sender.post(request('http://no-such-host.invalid/')), 'dns', SECRET);
    } finally {
      await cleanup();
      await r.close();
    }
  });

  t(
    'without private addresses: a name with none public fails as dns, whether it has private ones or none',
    async () => {
      const { sender, cleanup } = await fresh({ privateAddresses: false, timeoutMs: 2_000 });
      try {
        const err = await refused(sender.post(request('http://no-such-host.invalid/')), 'dns', SECRET);
        assert.match(err.message, /no-such-host\.invalid.*no public address/);
      } finally {
        await cleanup();
      }
    },
  );

  t('without private addresses: loopback, private, link-local and mapped ones are never connected to', async () => {
    const r = await receiver((_req, res) => res.writeHead(200).end());
    const { sender, cleanup } = await fresh({ privateAddresses: false, timeoutMs: 2_000 });
    try {
      const urls = [
        `http://127.0.0.1:${r.port}/`,
        `http://localhost:${r.port}/`,
        `http://[::1]:${r.port}/`,
        `http://[::ffff:127.0.0.1]:${r.port}/`,
        `http://[::ffff:7f00:1]:${r.port}/`,
        `http://[::ffff:0:127.0.0.1]:${r.port}/`,
        `http://localhost.:${r.port}/`,
        `http://a.localhost:${r.port}/`,
        `http://0.0.0.0:${r.port}/`,
        `http://2130706433:${r.port}/`,
        `http://0x7f.1:${r.port}/`,
        'http://169.254.169.254/latest/meta-data/',
        'http://10.0.0.1/',
        'http://192.168.1.1/',
        'http://[fd00::1]/',
        'http://[fe80::1]/',
      ];
      for (const url of urls) {
        const err = await refused(sender.post(request(url)), 'address_refused', SECRET);
        assert.ok(err.message.length > 0, url);
      }
      assert.is(r.connections(), 0, 'no connection reached the receiver');
      assert.is(r.seen.length, 0);
    } finally {
      await cleanup();
      await r.close();
    }
  });

  t.run();
}
