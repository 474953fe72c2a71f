import { sseEvents } from '../../client/operation-stream.js';
import { GATE_FILE } from './gated-build.js';
import { zipOf } from './live.js';

/** One Server-Sent Event as a client sees it (`data` parsed as JSON). */
export interface SseEvent {
  id: string | undefined;
  event: string;
  data: any;
}

/** An open event stream: its status, its events as they come, all text received, and a way to hang up. */
export interface SseStream {
  status: number;
  headers: Headers;
  /** The events, until the server ends the stream or `close` is called. */
  events: AsyncGenerator<SseEvent>;
  /** Everything received so far (comments included). */
  text(): string;
  /** Hangs up (a client that disconnects). */
  close(): void;
  /** The body of a non-200 answer. */
  body?: any;
}

/** GETs `url` with Accept: text/event-stream (and Last-Event-ID when given) and parses what comes. */
export async function openStream(url: string, token: string, lastEventId?: string): Promise<SseStream> {
  const control = new AbortController();
  const res = await fetch(url, {
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'text/event-stream',
      ...(lastEventId !== undefined ? { 'last-event-id': lastEventId } : {}),
    },
    signal: control.signal,
  });
  let all = '';
  if (res.status !== 200 || !res.body) {
    const body = await res.json().catch(() => null);
    return {
      status: res.status,
      headers: res.headers,
      events: (async function* () {})(),
      text: () => '',
      close() {},
      body,
    };
  }
  const body = res.body;
  async function* events(): AsyncGenerator<SseEvent> {
    try {
      for await (const e of sseEvents(body as unknown as AsyncIterable<Uint8Array>, (t) => (all += t)))
        yield { id: e.id, event: e.event, data: JSON.parse(e.data) };
    } catch (err) {
      if (!control.signal.aborted) throw err;
    }
  }
  return { status: res.status, headers: res.headers, events: events(), text: () => all, close: () => control.abort() };
}

/** Reads `stream` to its end, or until `stop` says so after an event; returns the events read. */
export async function readEvents(stream: SseStream, stop?: (e: SseEvent) => boolean): Promise<SseEvent[]> {
  const got: SseEvent[] = [];
  for await (const e of stream.events) {
    got.push(e);
    if (stop?.(e)) break;
  }
  return got;
}

/** The log lines among `events`, checked to follow on from line `from` with no gap and no repeat. */
export function logLines(events: SseEvent[], from = 0): string[] {
  const lines: string[] = [];
  for (const e of events.filter((x) => x.event === 'log')) {
    if (e.data.from !== from + lines.length)
      throw new Error(`log event from ${e.data.from}, expected ${from + lines.length}`);
    lines.push(...e.data.lines);
  }
  return lines;
}

/** The lines a streamed site's build prints, in order. */
export const expected = Array.from({ length: 30 }, (_, i) => `line ${i}`);
/** The lines among `lines` the streamed site's build printed (not Hoist's own). */
export const ours = (lines: string[]) => lines.filter((l) => /^line \d+$/.test(l));

/**
 * A site built with `node build.js` (output `dist`): it prints `line 0` to `line 29`, 20 ms apart,
 * waiting after `line 9` for the workspace gate `gateId` (test/helpers/gated-build.ts) to open.
 */
export const streamedSite = (gateId: string) =>
  zipOf({
    'src.txt': 'x',
    'build.js': `// ${gateId}
const fs = require('fs');
let i = 0;
const next = () => {
  if (i === 10 && !fs.existsSync(${JSON.stringify(GATE_FILE)})) return setTimeout(next, 50);
  if (i === 30) {
    fs.mkdirSync('dist', { recursive: true });
    return fs.writeFileSync('dist/index.html', 'streamed');
  }
  console.log('line ' + i++);
  setTimeout(next, 20);
};
next();
`,
  });
