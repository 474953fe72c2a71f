import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HoistConfig } from '../../config/schema.js';
import type { StreamEvent } from '../../core/deployments/operation-events.js';
import { HoistError } from '../../core/errors.js';

/** True when the request asks for Server-Sent Events (Accept: text/event-stream). */
export const wantsEventStream = (req: FastifyRequest) => /\btext\/event-stream\b/i.test(req.headers.accept ?? '');

/** The Last-Event-ID a reconnecting client sends. */
export const lastEventId = (req: FastifyRequest): string | undefined => {
  const h = req.headers['last-event-id'];
  return typeof h === 'string' ? h : undefined;
};

const frame = (e: StreamEvent) => `id: ${e.id}\nevent: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`;

/**
 * The open Server-Sent Event streams of one API process: bounded per account (429 rate_limited) and
 * in all (503 unavailable), each with a heartbeat comment, each ended when its client goes or the
 * server closes.
 */
export class EventStreams {
  private readonly byAccount = new Map<string, number>();
  private readonly open = new Set<AbortController>();

  constructor(
    private readonly config: Pick<
      HoistConfig,
      'eventStreamsPerAccount' | 'eventStreamsMax' | 'eventStreamHeartbeatSeconds'
    >,
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
    const mine = this.byAccount.get(accountId) ?? 0;
    if (mine >= this.config.eventStreamsPerAccount)
      throw new HoistError(
        'rate_limited',
        `At most ${this.config.eventStreamsPerAccount} event streams per account are open at once; ` +
          'close one, or poll without Accept: text/event-stream',
        { limit: this.config.eventStreamsPerAccount, retry_after: 5 },
      );
    if (this.open.size >= this.config.eventStreamsMax)
      throw new HoistError('unavailable', 'Too many event streams are open; poll without Accept: text/event-stream', {
        retry_after: 5,
      });
    const control = new AbortController();
    this.open.add(control);
    this.byAccount.set(accountId, mine + 1);
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
        if (!res.write(frame(e))) await drained(res, control.signal);
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
      const left = (this.byAccount.get(accountId) ?? 1) - 1;
      if (left > 0) this.byAccount.set(accountId, left);
      else this.byAccount.delete(accountId);
      res.end();
    }
  }

  /** Ends every open stream (the server is closing). */
  closeAll(): void {
    for (const c of this.open) c.abort();
  }
}

function drained(res: NodeJS.WritableStream, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    res.once('drain', done);
    signal.addEventListener('abort', done, { once: true });
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
  'come as one state event). Too many open streams: 429 per account, 503 in all; poll instead. A ' +
  'malformed Last-Event-ID is 400.';
