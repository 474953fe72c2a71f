import { createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { liveHoist, type LiveHoist } from '../helpers/live.js';
import { accountWithPassword, remoteCli, type RemoteCli } from '../helpers/remote-cli.js';

/** One request the receiver got. */
interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

let h: LiveHoist;
let cli: RemoteCli;
let user: { email: string; password: string };
let receiver: http.Server;
let receiverUrl: string;
const received: Received[] = [];
const project = ['--project', 'hook-site'];
let hookId: string;
let secret: string;

// A live Hoist that may post to loopback addresses, a receiver there that answers 204, and a project
// deployed with the CLI.
test.before(async () => {
  h = await liveHoist({ healthTimeoutSeconds: 10, webhookPrivateAddresses: true });
  cli = remoteCli(h);
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  user = await accountWithPassword(h);
  const login = await cli.run(['login'], `${user.email}\n${user.password}\n`);
  assert.is(login.code, 0, login.stderr);
  const dir = join(mkdtempSync(join(tmpdir(), 'hoist-cli-webhooks-')), 'hook-site');
  mkdirSync(dir);
  writeFileSync(join(dir, 'index.html'), '<h1>hooks</h1>');
  const deploy = await cli.run(['deploy', dir]);
  assert.is(deploy.code, 0, deploy.stderr);
});
test.after(async () => {
  receiver?.close();
  await h?.close();
});

const lsJson = async () => {
  const r = await cli.run(['webhooks', 'ls', ...project, '--json']);
  assert.is(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as { id: string; url: string; events: string[]; last_delivery: any }[];
};

test('bad usage exits 2 before any request: an unknown event, a limit out of range, an id not a UUID', async () => {
  // An API that cannot be reached: a request would fail with exit 1, not 2.
  const away = { HOIST_TOKEN: 'x', HOIST_API_URL: 'http://127.0.0.1:9' };
  const unknown = await cli.run(
    ['webhooks', 'add', 'https://example.com/h', '--events', 'deployment.succeeded,deployment.created', ...project],
    undefined,
    away,
  );
  assert.is(unknown.code, 2, unknown.stderr);
  assert.match(unknown.stderr, '"deployment.created" is not a webhook event');
  assert.match(unknown.stderr, 'deployment.succeeded, deployment.failed, deployment.canceled');
  for (const args of [
    ['add', 'https://example.com/h', '--events', ','],
    ['deliveries', randomUUID(), '-n', '0'],
    ['deliveries', randomUUID(), '--limit', '101'],
    ['deliveries', randomUUID(), '-n', 'ten'],
    ['rm', 'not-an-id'],
    ['ping', 'not-an-id'],
  ]) {
    const r = await cli.run(['webhooks', ...args, ...project], undefined, away);
    assert.is(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
  }
  const limit = await cli.run(['webhooks', 'deliveries', randomUUID(), '-n', '0', ...project]);
  assert.is(limit.code, 2, limit.stderr);
  assert.match(limit.stderr, '--limit takes a number from 1 to 100');
  const json = await cli.run(['webhooks', 'add', 'https://example.com/h', '--events', 'nope', ...project, '--json']);
  assert.is(json.code, 2);
  assert.is(JSON.parse(json.stdout).error.code, 'bad_usage');
  assert.equal(await lsJson(), [], 'nothing was created');
});

test('add prints the signing secret alone on stdout, once; --json prints the whole webhook', async () => {
  const r = await cli.run(['webhooks', 'add', receiverUrl, ...project]);
  assert.is(r.code, 0, r.stderr);
  secret = r.stdout.trim();
  assert.match(secret, /^whsec_[A-Za-z0-9+/]+={0,2}$/);
  assert.is(r.stdout, `${secret}\n`);
  assert.match(r.stderr, /Added webhook [0-9a-f-]{36} on hook-site for deployment\.succeeded, deployment\.failed/);
  assert.match(r.stderr, 'not shown again');
  hookId = /Added webhook ([0-9a-f-]{36})/.exec(r.stderr)![1];

  const j = await cli.run([
    'webhooks',
    'add',
    'https://example.com/other',
    '--events',
    'deployment.failed, deployment.canceled',
    ...project,
    '--json',
  ]);
  assert.is(j.code, 0, j.stderr);
  const other = JSON.parse(j.stdout);
  assert.is(other.url, 'https://example.com/other');
  assert.equal(other.events, ['deployment.failed', 'deployment.canceled']);
  assert.match(other.secret, /^whsec_/);
  assert.is(other.last_delivery, null);
  assert.is((await cli.run(['webhooks', 'rm', other.id, ...project])).code, 0);
});

test('ls lists the webhook with its events and no delivery yet, and never a secret', async () => {
  const r = await cli.run(['webhooks', 'ls', ...project]);
  assert.is(r.code, 0, r.stderr);
  const [head, row, ...rest] = r.stdout.trim().split('\n');
  assert.equal(head.split(/\s+/), ['ID', 'URL', 'EVENTS', 'BY', 'LAST', 'DELIVERY']);
  assert.equal(row.split(/\s+/), [
    hookId,
    receiverUrl,
    'deployment.succeeded,deployment.failed,deployment.canceled',
    user.email,
    'never',
  ]);
  assert.equal(rest, []);
  const json = await cli.run(['webhooks', 'ls', ...project, '--json']);
  for (const out of [r.stdout + r.stderr, json.stdout + json.stderr]) {
    assert.not.match(out, 'whsec_');
    assert.not.match(out, secret.slice(6));
  }
  assert.equal(
    JSON.parse(json.stdout).map((w: any) => [w.id, w.url, w.last_delivery]),
    [[hookId, receiverUrl, null]],
  );
});

test('ping queues a delivery the receiver gets, signed with the secret add printed; deliveries lists it', async () => {
  const r = await cli.run(['webhooks', 'ping', hookId, ...project]);
  assert.is(r.code, 0, r.stderr);
  const deliveryId = /Queued ping ([0-9a-f-]{36})/.exec(r.stdout)?.[1];
  assert.ok(deliveryId, r.stdout);

  const end = performance.now() + 30_000;
  let deliveries: any[] = [];
  while (deliveries[0]?.status !== 'delivered') {
    if (performance.now() > end) throw new Error(`the ping was not delivered: ${JSON.stringify(deliveries)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const d = await cli.run(['webhooks', 'deliveries', hookId, ...project, '--json']);
    assert.is(d.code, 0, d.stderr);
    deliveries = JSON.parse(d.stdout);
  }
  assert.is(deliveries.length, 1);
  assert.is(deliveries[0].id, deliveryId);
  assert.is(deliveries[0].event, 'ping');

  const got = received.find((x) => x.headers['webhook-id'] === deliveryId);
  assert.ok(got, 'the receiver got the ping');
  assert.is(got.headers['x-hoist-event'], 'ping');
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const signed = `${deliveryId}.${got.headers['webhook-timestamp']}.${got.body}`;
  assert.is(got.headers['webhook-signature'], `v1,${createHmac('sha256', key).update(signed).digest('base64')}`);

  const table = await cli.run(['webhooks', 'deliveries', hookId, '-n', '5', ...project]);
  assert.is(table.code, 0, table.stderr);
  const [head, row] = table.stdout.trim().split('\n');
  assert.equal(head.split(/\s+/), ['TIME', 'EVENT', 'STATUS', 'ATTEMPTS', 'ANSWER']);
  assert.equal(row.split(/\s+/).slice(1), ['ping', 'delivered', '1', '204']);
  assert.match(row.split(/\s+/)[0], /^\d{4}-\d\d-\d\dT/);
  const ls = await cli.run(['webhooks', 'ls', ...project]);
  assert.match(ls.stdout, / delivered$/m);
});

test("API errors are shown with exit 1: a URL that is not http(s), a webhook that doesn't exist", async () => {
  const ftp = await cli.run(['webhooks', 'add', 'ftp://x', ...project]);
  assert.is(ftp.code, 1, ftp.stderr);
  assert.match(ftp.stderr, /^hoist: url must be http or https \(invalid_request, request [^)]+\)$/m);
  assert.is(ftp.stdout, '');
  const missing = randomUUID();
  for (const sub of ['rm', 'ping', 'deliveries']) {
    const r = await cli.run(['webhooks', sub, missing, ...project]);
    assert.is(r.code, 1, `${sub}: ${r.stderr}`);
    assert.match(r.stderr, /\(not_found, request /, `${sub}: ${r.stderr}`);
  }
  const json = await cli.run(['webhooks', 'rm', missing, ...project, '--json']);
  assert.is(json.code, 1);
  assert.is(JSON.parse(json.stdout).error.code, 'not_found');
  const noProject = await cli.run(['webhooks', 'ls', '--project', 'nope']);
  assert.is(noProject.code, 1);
  assert.match(noProject.stderr, 'No project "nope"');
  assert.equal(
    (await lsJson()).map((w) => w.id),
    [hookId],
  );
});

test('rm removes the webhook: ls is empty then', async () => {
  const r = await cli.run(['webhooks', 'rm', hookId, ...project]);
  assert.is(r.code, 0, r.stderr);
  assert.is(r.stdout, `Removed webhook ${hookId} from hook-site.\n`);
  const ls = await cli.run(['webhooks', 'ls', ...project]);
  assert.is(ls.stdout, 'no webhooks on hook-site\n');
  assert.equal(await lsJson(), []);
});

test.run();
