import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HoistConfig } from '../../config/schema.js';
import type { StreamEvent } from '../../core/deployments/operation-events.js';
import { addressKey } from '../../core/auth/address-key.js';
import { HoistError } from '../../core/errors.js';

/** True when the request asks for Server-Sent Events (Accept: text/event-stream). */
export const wantsEventStream = (req: FastifyRequest) => /\btext\/event-stream\b/i.test(req.headers.accept ?? '');

/** The Last-Event-ID a reconnecting client sends. */
export const lastEventId = (req: FastifyRequest): string | undefined => {
  const h = req.headers['last-event-id'];
  return typeof h === 'string' ? h : undefined;
};

const frame = (e: StreamEvent) => `id: ${e.id}\nevent: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`;

/** How long a stream waits for its client to take what was written before it ends the stream. */
export const STALLED_STREAM_MS = 30_000;

/**
 * The open Server-Sent Event streams of one API process: bounded per account and per client address (an IPv6 /64),
 * both at eventStreamsPerAccount (429 rate_limited), and in all (503 unavailable), each with a heartbeat comment,
 * each ended when its client goes, stops reading for `stalledMs`, or the server closes.
 */
export class EventStreams {
  private readonly byAccount = new Map<string, number>();
  private readonly byAddress = new Map<string, number>();
  private readonly open = new Set<AbortController>();

  constructor(
    private readonly config: Pick<
      HoistConfig,
      'eventStreamsPerAccount' | 'eventStreamsMax' | 'eventStreamHeartbeatSeconds'
    >,
    private readonly stalledMs = STALLED_STREAM_MS,
  ) {}

  /** How many streams are open now. */
  get size(): number {
    return this.open.size;
  }

  /**
   * Answers the request with the events `events` yields (given an AbortSignal that fires when the
   * client goes or the server closes), then ends the response. Throws before answering when a
   * limit is reached. Check that the resource exists first: after this starts, errors end the stream.
   */
  async send(
    req: FastifyRequest,
    reply: FastifyReply,
    accountId: string,
    events: (signal: AbortSignal) => AsyncGenerator<StreamEvent>,
  ): Promise<void> {
    const address = addressKey(req.ip);
    const limit = this.config.eventStreamsPerAccount;
    for (const [who, counts, key] of [
      ['account', this.byAccount, accountId],
      ['client address', this.byAddress, address],
    ] as const)
      if ((counts.get(key) ?? 0) >= limit)
        throw new HoistError(
          'rate_limited',
          `At most ${limit} event streams per ${who} are open at once; ` +
            'close one, or poll without Accept: text/event-stream',
          { limit, retry_after: 5 },
        );
    if (this.open.size >= this.config.eventStreamsMax)
      throw new HoistError('unavailable', 'Too many event streams are open; poll without Accept: text/event-stream', {
        retry_after: 5,
      });
    const control = new AbortController();
    this.open.add(control);
    count(this.byAccount, accountId, 1);
    count(this.byAddress, address, 1);
    const res = reply.raw;
    const stop = () => control.abort();
    res.on('close', stop);
    reply.hijack();
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-request-id': req.id,
    });
    res.write('retry: 2000\n\n');
    const heartbeat = setInterval(
      () => res.destroyed || res.write(': heartbeat\n\n'),
      this.config.eventStreamHeartbeatSeconds * 1000,
    );
    try {
      for await (const e of events(control.signal)) {
        if (control.signal.aborted) break;
        if (!res.write(frame(e)) && !(await drained(res, control.signal, this.stalledMs))) {
          // A client that takes nothing holds its slots and the answer's memory: it is let go.
          res.destroy();
          break;
        }
      }
    } catch (err) {
      const e = err instanceof HoistError ? err : new HoistError('internal', 'The event stream failed');
      if (!(err instanceof HoistError)) req.log.error({ err }, 'event stream failed');
      if (!control.signal.aborted)
        res.write(`event: error\ndata: ${JSON.stringify({ error: { code: e.code, message: e.message } })}\n\n`);
    } finally {
      clearInterval(heartbeat);
      res.off('close', stop);
      this.open.delete(control);
      count(this.byAccount, accountId, -1);
      count(this.byAddress, address, -1);
      res.end();
    }
  }

  /** Ends every open stream (the server is closing). */
  closeAll(): void {
    for (const c of this.open) c.abort();
  }
}

/** Adds `by` to the count of `key`, forgetting it at 0. */
function count(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}

/** Resolves true once `res` drained or `signal` fired, false when neither came within `ms`. */
function drained(res: NodeJS.WritableStream, signal: AbortSignal, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => () => {
      clearTimeout(timer);
      res.off('drain', onDrain);
      signal.removeEventListener('abort', onAbort);
      resolve(ok);
    };
    const [onDrain, onAbort] = [done(true), done(true)];
    const timer = setTimeout(done(false), ms);
    res.once('drain', onDrain);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

const perKernel = new WeakMap<object, EventStreams>();

/** The EventStreams of the API built on `kernel` (one per process and kernel, shared by its routes). */
export function eventStreamsOf(kernel: { config: HoistConfig }): EventStreams {
  let s = perKernel.get(kernel);
  if (!s) perKernel.set(kernel, (s = new EventStreams(kernel.config)));
  return s;
}

/** How an operation's event stream works (the route's OpenAPI description and the README say the same). */
export const EVENT_STREAM_DOC =
  'With `Accept: text/event-stream` the answer is a stream of Server-Sent Events instead: `state` ' +
  '(data: the operation as this call answers it) each time it changed, `log` (data: `{build_id, from, ' +
  'lines}`, the build-log lines from line `from` of the operation, counted across its attempts) as the ' +
  'build writes them, a comment line as heartbeat every 15 s (eventStreamHeartbeatSeconds), and the ' +
  'final state last; then the stream closes. Each event id is `<revision>.<lines>`: send the last one ' +
  'back as `Last-Event-ID` to resume with nothing missed and nothing repeated (changes in between may ' +
  'come as one state event). Too many open streams: 429 per account or client address, 503 in all; poll ' +
  'instead. A client that takes nothing written for 30 s is disconnected. A ' +
  'malformed Last-Event-ID is 400.';
