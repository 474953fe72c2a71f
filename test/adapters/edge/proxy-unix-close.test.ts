import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createReleaseProxy } from '../../../adapters/edge/proxy.js';
import { ReleaseAgent } from '../../../adapters/edge/release-agent.js';

// A release on a unix socket, in a worker thread (it runs while the edge's thread is held): it reads one request
// whole, answers it, closes its connection at once (as a release asked `Connection: close` does, or the bwrap
// sandbox's relay once its app has), then tells the edge's thread so through `closed`.
const RELEASE = `
const net = require('node:net');
const { workerData, parentPort } = require('node:worker_threads');
const closed = new Int32Array(workerData.closed);
const server = net.createServer((c) => {
  let got = '';
  c.on('data', (d) => {
    got += d;
    const head = got.indexOf('\\r\\n\\r\\n');
    const length = Number(/content-length: *(\\d+)/i.exec(got)?.[1] ?? 0);
    if (head < 0 || got.length < head + 4 + length) return;
    const body = JSON.stringify({ body: got.slice(head + 4) });
    c.write('HTTP/1.1 200 OK\\r\\ncontent-type: application/json\\r\\ncontent-length: ' + body.length +
      '\\r\\nconnection: close\\r\\n\\r\\n' + body);
    c.destroy();
    c.once('close', () => {
      Atomics.store(closed, 0, 1);
      Atomics.notify(closed, 0);
    });
  });
});
server.listen(workerData.path, () => parentPort.postMessage('listening'));
`;

/**
 * Holds the edge's thread (as a busy machine deschedules its process) before any write of no bytes on a connection it
 * opens, until the release has closed it: the moment the flaky 502 after a deployment came from.
 */
function holdEmptyWrites(closed: Int32Array): () => void {
  const hold = (chunks: { length: number }[]) => {
    if (chunks.every((c) => c.length === 0)) Atomics.wait(closed, 0, 0, 5000);
  };
  type Write = (this: Socket, chunk: { length: number }, ...rest: unknown[]) => void;
  type Writev = (this: Socket, chunks: { chunk: { length: number } }[], ...rest: unknown[]) => void;
  const onSocket = ({ socket }: { socket: Socket }) => {
    const s = socket as unknown as { _write: Write; _writev: Writev };
    const write = s._write;
    const writev = s._writev;
    s._write = function (chunk, ...rest) {
      hold([chunk]);
      return write.call(this, chunk, ...rest);
    };
    s._writev = function (chunks, ...rest) {
      hold(chunks.map((c) => c.chunk));
      return writev.call(this, chunks, ...rest);
    };
  };
  const listener = onSocket as (message: unknown) => void;
  subscribe('net.client.socket', listener);
  return () => unsubscribe('net.client.socket', listener);
}

test('a POST gets its answer when the release closes the connection right after it (unix socket)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hoist-proxy-close-'));
  const path = join(dir, 'http.sock');
  const closed = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(RELEASE, { eval: true, workerData: { path, closed: closed.buffer } });
  await new Promise((resolve, reject) => worker.once('message', resolve).once('error', reject));
  const proxy = createReleaseProxy({ trustProxy: false, appsScheme: 'http', appsDomain: 'apps.example' });
  const target = { kind: 'http' as const, url: 'http://127.0.0.1:9', socket: path };
  const edge = http.createServer((req, res) => proxy.web(req, res, target, {}));
  await new Promise<void>((r) => edge.listen(0, '127.0.0.1', r));
  const release = holdEmptyWrites(closed);
  try {
    // The client's request as the e2e test sends it: one write, its connection closed after the answer.
    const client = connect((edge.address() as AddressInfo).port, '127.0.0.1');
    client.write('POST /echo HTTP/1.1\r\nHost: app\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello');
    let answer = '';
    client.on('data', (d) => (answer += d));
    await new Promise((resolve, reject) => client.once('close', resolve).once('error', reject));
    assert.match(answer, /^HTTP\/1\.1 200 /, answer);
    assert.match(answer, /\r\n\r\n\{"body":"hello"\}$/, answer);
    assert.is(Atomics.load(closed, 0), 1, 'the release closed the connection');
  } finally {
    release();
    edge.closeAllConnections();
    await new Promise((r) => edge.close(r));
    await worker.terminate();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the release agent finishes a write of no bytes at once on a unix socket whose other end closed', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hoist-proxy-close-'));
  const path = join(dir, 'http.sock');
  let onClose = () => {};
  const server = createServer((c) => c.destroy().once('close', () => onClose()));
  await new Promise<void>((r) => server.listen(path, r));
  // A connection the server has closed, not read from (as the edge's, held back, had not read the release's answer).
  const closedOne = async (open: () => Socket) => {
    const gone = new Promise<void>((r) => (onClose = r));
    const socket = open().pause();
    await Promise.all([gone, once(socket, 'connect')]);
    return socket;
  };
  const write = (socket: Socket, data: string) =>
    new Promise<string | undefined>((resolve) => {
      socket.once('error', () => {});
      socket.write(data, (err) => resolve((err as NodeJS.ErrnoException | null)?.code));
    });
  try {
    // What Linux does (the reason for the agent): any write to a unix socket whose other end closed fails.
    const plain = await closedOne(() => connect(path));
    assert.is(await write(plain, ''), 'EPIPE');
    plain.destroy();
    // As node:http's agent asks it (its createSocket puts a socketPath in path).
    const socket = await closedOne(() => new ReleaseAgent().createConnection({ path }) as Socket);
    assert.is(await write(socket, ''), undefined);
    // A write of bytes still fails as it did.
    assert.is(await write(socket, 'more'), 'EPIPE');
    socket.destroy();
  } finally {
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
