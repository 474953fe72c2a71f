// EventStreams on a real server and real sockets: streams are bounded per client address as per account, and a
// client that stops reading is let go once a write has waited stalledMs, freeing its slots.
import Fastify, { type FastifyInstance } from 'fastify';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { EventStreams } from '../../../adapters/http/event-stream.js';
import { errorHandler } from '../../../adapters/http/error-handler.js';

const LIMIT = 2;
const STALLED_MS = 300;
let app: FastifyInstance;
let streams: EventStreams;
let port: number;

test.before(async () => {
  streams = new EventStreams(
    { eventStreamsPerAccount: LIMIT, eventStreamsMax: 100, eventStreamHeartbeatSeconds: 60 },
    STALLED_MS,
  );
  app = Fastify();
  app.setErrorHandler(errorHandler);
  // `/big/<account>`: 64 KiB events for ever; `/quiet/<account>`: one event, then nothing until the client goes.
  app.get<{ Params: { kind: string; account: string } }>('/:kind/:account', (req, reply) =>
    streams.send(req, reply, req.params.account, async function* (signal) {
      const lines = [req.params.kind === 'big' ? 'x'.repeat(65536) : 'hello'];
      for (let i = 0; !signal.aborted; i++) {
        yield { id: String(i), event: 'log' as const, data: { build_id: 'b', from: i, lines } };
        if (req.params.kind !== 'big') await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
      }
    }),
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as { port: number }).port;
});
test.after(async () => {
  streams?.closeAll();
  await app?.close();
});

/** Opens a stream over a raw socket that reads nothing unless `read`; resolves once the answer's head came. */
async function open(path: string, read = true): Promise<{ socket: Socket; head: string }> {
  const socket = connect(port, '127.0.0.1');
  socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n`);
  const head = await new Promise<string>((resolve) => {
    let got = '';
    const onData = (c: Buffer) => {
      got += c.toString('latin1');
      if (got.includes('\r\n\r\n')) {
        socket.off('data', onData);
        if (!read) socket.pause();
        resolve(got.split('\r\n')[0]);
      }
    };
    socket.on('data', onData);
  });
  if (read) socket.resume();
  return { socket, head };
}

test('a client address holds at most eventStreamsPerAccount streams, whichever accounts open them', async () => {
  const a = await open('/quiet/a');
  const b = await open('/quiet/b');
  assert.is(a.head, 'HTTP/1.1 200 OK');
  assert.is(b.head, 'HTTP/1.1 200 OK');
  const res = await fetch(`http://127.0.0.1:${port}/quiet/c`, { headers: { accept: 'text/event-stream' } });
  assert.is(res.status, 429);
  const { error } = await res.json();
  assert.is(error.code, 'rate_limited');
  assert.match(error.message, `At most ${LIMIT} event streams per client address`);
  a.socket.destroy();
  b.socket.destroy();
  for (let i = 0; i < 50 && streams.size; i++) await sleep(20);
  assert.is(streams.size, 0, 'their slots are free once they go');
});

test('a client that stops reading is disconnected after stalledMs, and its slots are free again', async () => {
  const { socket, head } = await open('/big/a', false);
  assert.is(head, 'HTTP/1.1 200 OK');
  assert.is(streams.size, 1);
  const closed = new Promise((r) => socket.once('close', r));
  socket.on('error', () => {});
  for (let i = 0; i < 100 && streams.size; i++) await sleep(STALLED_MS / 5);
  assert.is(streams.size, 0, 'the stream ended');
  // The server hung up: what was in flight may still be read, then the socket closes.
  socket.resume();
  await Promise.race([closed, sleep(5000)]);
  assert.ok(socket.destroyed, 'the server closed the connection');
});

test.run();
