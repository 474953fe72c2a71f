import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'nats';
import { NatsQueue, type NatsQueueOptions } from '../../plugins/queue-nats/nats-queue.js';
import { freePort } from '../../plugins/shared/sandbox/free-port.js';
import type { QueueFixture } from '../contract/queue.js';

/** The machine's shared NATS (JetStream on). Tests use streams of their own on it, never its defaults. */
export const natsUrl = process.env.HOIST_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';

/** A stream name no other test process uses. */
export const uniqueStream = () => `HOIST_T${process.pid}_${Math.random().toString(36).slice(2, 8)}`;

/** Deletes `stream` and the presence bucket of a NatsQueue on it. */
export async function dropStream(url: string, stream: string): Promise<void> {
  const nc = await connect({ servers: url });
  const jsm = await nc.jetstreamManager();
  for (const name of [stream, `KV_${stream}_workers`]) await jsm.streams.delete(name).catch(() => false);
  await nc.close();
}

/** Two NatsQueue instances (two connections, as two processes) on a fresh stream, deleted by cleanup. */
export async function natsQueueFixture(
  opts: Pick<NatsQueueOptions, 'ackWaitMs' | 'maxDeliveries'>,
): Promise<QueueFixture> {
  const stream = uniqueStream();
  const make = () => new NatsQueue({ url: natsUrl, stream, consumer: 'workers', ...opts });
  const queue = make();
  const peer = make();
  await queue.start();
  await peer.start();
  return {
    queue,
    peer,
    maxDeliveries: opts.maxDeliveries,
    cleanup: async () => {
      await queue.stop();
      await peer.stop();
      await dropStream(natsUrl, stream);
    },
  };
}

export { freePort };

/** A nats-server of the test's own (JetStream, its own store), which the test may stop and restart. */
export interface OwnNats {
  url: string;
  /** Stops the server (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>;
  /** Starts it again on the same port and store. */
  start(): Promise<void>;
  /** Stops it and removes its store. */
  close(): Promise<void>;
}

/** Starts `/usr/sbin/nats-server -js` on a free port with a store in a temporary directory. */
export async function ownNatsServer(): Promise<OwnNats> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'hoist-nats-'));
  const url = `nats://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  const self: OwnNats = {
    url,
    async start() {
      child = spawn('/usr/sbin/nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir], {
        stdio: 'ignore',
      });
      const end = Date.now() + 20_000;
      for (;;) {
        const nc = await connect({ servers: url, timeout: 1000 }).catch(() => null);
        if (nc) {
          const up = await nc.jetstreamManager().then(
            () => true,
            () => false,
          );
          await nc.close();
          if (up) return;
        }
        if (Date.now() > end) throw new Error(`nats-server on ${port} did not start`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop() {
      const c = child;
      child = null;
      if (!c || c.exitCode !== null) return;
      await new Promise((r) => {
        c.once('exit', r);
        c.kill('SIGTERM');
      });
    },
    async close() {
      await self.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await self.start();
  return self;
}
