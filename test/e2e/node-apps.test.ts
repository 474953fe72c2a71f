// legs: db
import net from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';
import { rawRequest } from '../helpers/raw-http.js';

let h: LiveHoist;
let token: string;
test.before(async () => {
  h = await liveHoist({ healthTimeoutSeconds: 4 });
  ({ token } = await h.login());
});
test.after(async () => h?.close());

// A dependency-free server: answers with its marker, its pid and the forwarded headers; echoes POST
// bodies; answers WebSocket-style upgrades with 101 and a greeting.
const server = (marker: string) => `
const http = require('http');
const s = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({
      marker: ${JSON.stringify(marker)},
      pid: process.pid,
      method: req.method,
      body,
      forwardedFor: req.headers['x-forwarded-for'] || null,
      forwardedHost: req.headers['x-forwarded-host'] || null,
      port: process.env.PORT,
    }));
  });
});
s.on('upgrade', (req, socket) => {
  socket.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n\\r\\n');
  socket.write('hello from ${marker}');
});
s.listen(Number(process.env.PORT), '127.0.0.1');
`;

async function deploy(name: string, files: Record<string, string>) {
  const res = await h.upload(token, '/api/v1/local-to-live', await zipOf(files), { name });
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  return { op: await h.waitFor(token, body.operation.id, undefined, 90_000), url: body.project.url as string };
}

test('a dependency-free Node.js server goes live and answers from its own process', async () => {
  const pkg = JSON.stringify({ name: 'app', version: '1.0.0', scripts: { start: 'node server.js' } });
  const { op, url } = await deploy('node-app', { 'package.json': pkg, 'server.js': server('one') });
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is(op.stages.analyze.result.runtime, 'node');
  assert.is(op.stages.analyze.result.start_command, 'npm start');
  const res = await h.site(hostOf(url), '/anything?x=1');
  assert.is(res.status, 200, res.body);
  const body = JSON.parse(res.body);
  assert.is(body.marker, 'one');
  assert.is.not(body.pid, process.pid);
  assert.is(body.forwardedHost, hostOf(url));
  assert.ok(body.forwardedFor);

  const post = await fetch(h.edge, { method: 'POST', body: 'ping' }).catch(() => null);
  assert.ok(post, 'edge answers');
  // Proxied requests (the reply is hijacked) are counted in the edge's metrics like the others
  // (read at the API's root: the public edge port has no /metrics).
  const metrics = async () =>
    Number(
      /^hoist_http_requests_total\{role="edge",method="GET",route="\/\*",status="200"\} (\d+)/m.exec(
        await (await fetch(`${h.api}/metrics`)).text(),
      )?.[1] ?? 0,
    );
  const before = await metrics();
  for (let i = 0; i < 3; i++) assert.is((await h.site(hostOf(url), `/count/${i}`)).status, 200);
  assert.is(await metrics(), before + 3, 'the three proxied requests');
});

test('POST bodies and WebSocket upgrades are proxied', async () => {
  const pkg = JSON.stringify({ name: 'ws-app', main: 'server.js' });
  const { op, url } = await deploy('ws-app', { 'package.json': pkg, 'server.js': server('ws') });
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  const edge = new URL(h.edge);
  const echoed = await new Promise<string>((resolve, reject) => {
    const s = net.connect(Number(edge.port), edge.hostname, () => {
      s.write(
        `POST /echo HTTP/1.1\r\nHost: ${hostOf(url)}\r\nContent-Length: ` +
          `5\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nhello`,
      );
    });
    let data = '';
    s.on('data', (d) => (data += d))
      .on('end', () => resolve(data))
      .on('error', reject);
  });
  assert.match(echoed, /"body":"hello"/);
  assert.match(echoed, /"method":"POST"/);

  const upgraded = await new Promise<string>((resolve, reject) => {
    const s = net.connect(Number(edge.port), edge.hostname, () => {
      s.write(
        `GET /socket HTTP/1.1\r\nHost: ${hostOf(url)}\r\nUpgrade: ` +
          `websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ` +
          `dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
    });
    let data = '';
    s.on('data', (d) => {
      data += d;
      if (data.includes('hello from ws')) {
        s.destroy();
        resolve(data);
      }
    });
    s.on('error', reject);
    setTimeout(() => reject(new Error(`no upgrade: ${data}`)), 5000);
  });
  assert.match(upgraded, /^HTTP\/1\.1 101/);
});

test('a package-lock.json app with a committed node_modules runs with its dependency', async () => {
  const pkg = JSON.stringify({
    name: 'dep-app',
    version: '1.0.0',
    dependencies: { greet: '1.0.0' },
    scripts: { start: 'node index.js' },
  });
  const lock = JSON.stringify({
    name: 'dep-app',
    version: '1.0.0',
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: 'dep-app', version: '1.0.0', dependencies: { greet: '1.0.0' } },
      'node_modules/greet': { version: '1.0.0' },
    },
  });
  const index =
    `require('http').createServer((q, r) => ` + `r.end(require('greet')('committed'))).listen(process.env.PORT);`;
  const { op, url } = await deploy('dep-app', {
    'package.json': pkg,
    'package-lock.json': lock,
    'index.js': index,
    'node_modules/greet/package.json': JSON.stringify({ name: 'greet', version: '1.0.0', main: 'index.js' }),
    'node_modules/greet/index.js': 'module.exports = (n) => `hello ${n}`;',
  });
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is((await h.site(hostOf(url))).body, 'hello committed');
});

test('a Vite-style project whose build writes dist/ is served as a static site', async () => {
  const pkg = JSON.stringify({ name: 'vite-like', scripts: { build: 'node build.js' }, devDependencies: {} });
  const build =
    `require('fs').mkdirSync('dist',{recursive:true}); ` +
    `require('fs').writeFileSync('dist/index.html','<p>built by node</p>');`;
  const res = await h.upload(token, '/api/v1/local-to-live', await zipOf({ 'package.json': pkg, 'build.js': build }), {
    name: 'vite-like',
    runtime: 'static',
  });
  const body = await res.json();
  const op = await h.waitFor(token, body.operation.id, undefined, 90_000);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is(op.stages.analyze.result.runtime, 'static');
  assert.is((await h.site(hostOf(body.project.url))).body, '<p>built by node</p>');
});

test(
  'the edge sets X-Forwarded-* for the app itself, and refuses two Host headers ' + 'before the app sees them',
  async () => {
    // The app records every request it gets and tells what it saw at /seen.
    const app = `
const seen = [];
require('http').createServer((req, res) => {
  if (req.url === '/seen') return res.end(JSON.stringify(seen));
  seen.push({
    url: req.url,
    host: req.headers.host,
    for: req.headers['x-forwarded-for'],
    fhost: req.headers['x-forwarded-host'],
    proto: req.headers['x-forwarded-proto'],
    forwarded: req.headers.forwarded || null,
    realIp: req.headers['x-real-ip'] || null,
  });
  res.end('ok');
}).on('upgrade', (req, socket) => {
  seen.push({ url: req.url, upgrade: true });
  socket.end('HTTP/1.1 101 Switching Protocols\\r\\n\\r\\n');
}).listen(process.env.PORT, '127.0.0.1');
`;
    const { op, url } = await deploy('headers-app', {
      'package.json': JSON.stringify({ name: 'headers-app', main: 'server.js' }),
      'server.js': app,
    });
    assert.is(op.status, 'succeeded', JSON.stringify(op));
    const host = hostOf(url);
    const claims = {
      'x-forwarded-for': '6.6.6.6',
      'x-forwarded-host': 'victim.example',
      'x-forwarded-proto': 'https',
      forwarded: 'for=6.6.6.6',
      'x-real-ip': '6.6.6.6',
    };

    const spoofed = await (
      await rawRequest(h.edge, 'GET', '/spoofed', { host, ...claims, connection: 'close' })
    ).response;
    assert.is(spoofed.status, 200, JSON.stringify(spoofed));

    for (const second of ['other-project.localhost', host, 'evil.example']) {
      const two = await (
        await rawRequest(h.edge, 'GET', '/two-hosts', { host, Host: second, connection: 'close' })
      ).response;
      assert.is(two.status, 400, second);
      assert.match(String(two.body), /more than one Host header/);
      assert.is(two.headers.connection, 'close');
    }
    const upgrade = await rawRequest(h.edge, 'GET', '/two-hosts-ws', {
      host,
      Host: 'evil.example',
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      'sec-websocket-version': '13',
    });
    assert.is((await upgrade.response).status, 400);

    // The site still answers, and the app saw only the one request, with the edge's own values (besides the deploy's
    // health check).
    const seen = JSON.parse((await h.site(host, '/seen')).body).filter((r: { url: string }) => r.url !== '/');
    assert.equal(seen, [
      { url: '/spoofed', host, for: '127.0.0.1', fhost: host, proto: 'http', forwarded: null, realIp: null },
    ]);
  },
);

test('no start command fails Analyze with guidance', async () => {
  const { op } = await deploy('no-start', { 'package.json': JSON.stringify({ name: 'x' }), 'lib.js': '1' });
  assert.is(op.status, 'failed');
  assert.is(op.stages.analyze.error.code, 'analyze_no_start_command');
  assert.match(op.stages.analyze.error.message, /start/);
  assert.is(op.next_step.action, 'fix_input');
});

test('a server that never listens fails Deploy with its log lines', async () => {
  const pkg = JSON.stringify({ name: 'mute', scripts: { start: 'node mute.js' } });
  const { op } = await deploy('mute', {
    'package.json': pkg,
    'mute.js': "console.log('booting but never listening'); setInterval(() => {}, 1000);",
  });
  assert.is(op.status, 'failed', JSON.stringify(op));
  assert.is(op.stages.deploy.error.code, 'deploy_unhealthy');
  assert.match(op.stages.deploy.error.message, /booting but never listening/);
});

test('a new release that fails its health check leaves the old one serving', async () => {
  const pkg = JSON.stringify({ name: 'steady', scripts: { start: 'node server.js' } });
  const first = await deploy('steady', { 'package.json': pkg, 'server.js': server('old') });
  assert.is(first.op.status, 'succeeded');
  const second = await deploy('steady', {
    'package.json': pkg,
    'server.js': "console.error('boom on start'); process.exit(3);",
  });
  assert.is(second.op.status, 'failed');
  assert.match(second.op.stages.deploy.error.message, /boom on start/);
  assert.is(JSON.parse((await h.site(hostOf(first.url))).body).marker, 'old');
});

test("a deployment's runtime log: what its app printed, with times; refused to another account", async () => {
  const pkg = JSON.stringify({ name: 'talky', scripts: { start: 'node server.js' } });
  const talky =
    `console.log('ready on', process.env.PORT); console.error('a warning'); ` +
    `require('http').createServer((q, r) => { console.log('GET', q.url); r.end('ok'); }).listen(process.env.PORT);`;
  const { op, url } = await deploy('talky', { 'package.json': pkg, 'server.js': talky });
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  const path = (query = '') => `/api/v1/projects/${op.project_id}/deployments/${op.result.deployment_id}/logs${query}`;
  assert.is((await h.site(hostOf(url), '/from-a-visitor')).body, 'ok');
  let log: any;
  for (let i = 0; i < 50; i++) {
    log = (await h.get(token, path())).body;
    if (log.lines?.some((l: { text: string }) => l.text === 'GET /from-a-visitor')) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.is(log.deployment_id, op.result.deployment_id);
  assert.is(log.kept, true);
  const texts = log.lines.map((l: { text: string }) => l.text);
  // stdout and stderr are two pipes: their lines may interleave either way.
  assert.ok(
    texts.some((t: string) => t.startsWith('ready on ')),
    texts.join('|'),
  );
  assert.ok(texts.includes('a warning'), 'stderr too');
  assert.ok(texts.includes('GET /from-a-visitor'), texts.join('|'));
  for (const line of log.lines) assert.ok(Math.abs(Date.parse(line.at) - Date.now()) < 120_000, line.at);
  const last = (await h.get(token, path('?lines=1'))).body;
  assert.equal(
    last.lines.map((l: { text: string }) => l.text),
    ['GET /from-a-visitor'],
  );

  assert.is((await h.get(token, path('?lines=0'))).status, 400);
  assert.is((await h.get(token, path('?lines=1001'))).status, 400);
  const other = await h.login();
  const theirs = await h.get(other.token, path());
  assert.is(theirs.status, 404, "another account's deployment is missing to it");
  assert.not.ok(JSON.stringify(theirs.body).includes('from-a-visitor'));

  const site = await h.upload(token, '/api/v1/local-to-live', await zipOf({ 'index.html': 'hi' }), { name: 'quiet' });
  const done = await h.waitFor(token, (await site.json()).operation.id);
  const quiet = await h.get(token, `/api/v1/projects/${done.project_id}/deployments/${done.result.deployment_id}/logs`);
  assert.equal(quiet.body, { deployment_id: done.result.deployment_id, kept: false, lines: [] });
});

test('a crash loop marks the deployment failed', async () => {
  const pkg = JSON.stringify({ name: 'crashy', scripts: { start: 'node server.js' } });
  // Serves, then crashes 3 s later on every start (long enough to pass a container's health check).
  const crashy =
    `require('http').createServer((q, r) => r.end('up')).listen(process.env.PORT); ` +
    `setTimeout(() => process.exit(1), 3000);`;
  const { op } = await deploy('crashy', { 'package.json': pkg, 'server.js': crashy });
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  const list = async () => (await h.get(token, `/api/v1/projects/${op.project_id}/deployments`)).body;
  const end = Date.now() + 60_000;
  let d: any;
  for (;;) {
    d = (await list()).deployments?.[0];
    if (d?.status === 'failed' || Date.now() > end) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.is(d?.status, 'failed', JSON.stringify(d));
  assert.is(d.error.code, 'deploy_crash_loop');
});

test.run();
