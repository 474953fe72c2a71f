/** One Server-Sent Event: its id, its name and its data as sent (text). */
export interface RawEvent {
  id: string | undefined;
  event: string;
  data: string;
}

/** The events of a `text/event-stream` body, as they come; comments (heartbeats) are left out. */
export async function* sseEvents(
  body: AsyncIterable<Uint8Array>,
  onText?: (text: string) => void,
): AsyncGenerator<RawEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    const text = decoder.decode(chunk, { stream: true });
    onText?.(text);
    buffer += text.replace(/\r\n?/g, '\n');
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const e: { id?: string; event: string; data: string[] } = { event: 'message', data: [] };
      for (const line of block.split('\n')) {
        const colon = line.indexOf(':');
        if (colon === 0) continue;
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') e.id = value;
        else if (field === 'event') e.event = value;
        else if (field === 'data') e.data.push(value);
      }
      if (e.data.length) yield { id: e.id, event: e.event, data: e.data.join('\n') };
    }
  }
}

/** An event of an operation's stream: its state, or build-log lines from line `from`. */
export type OperationEvent<Op> =
  | { event: 'state'; id: string; data: Op }
  | { event: 'log'; id: string; data: { build_id: string; from: number; lines: string[] } };

const TERMINAL = ['succeeded', 'failed', 'canceled'];

/**
 * Follows the event stream at `url` (GET with Accept: text/event-stream) until the operation is
 * terminal, calling `onEvent` for each event; a dropped connection is resumed with Last-Event-ID
 * (up to `retries` times in a row). Returns the last state, or null when the server answers
 * without a stream (the caller polls instead).
 */
export async function followOperation<Op extends { status?: string }>(
  url: string,
  headers: Record<string, string>,
  onEvent: (e: OperationEvent<Op>) => void,
  retries = 5,
): Promise<Op | null> {
  let last: string | undefined;
  let state: Op | null = null;
  for (let failures = 0; ;) {
    try {
      const res = await fetch(url, {
        headers: { ...headers, accept: 'text/event-stream', ...(last ? { 'last-event-id': last } : {}) },
      });
      if (!res.ok || !res.body || !/^text\/event-stream/.test(res.headers.get('content-type') ?? '')) {
        await res.body?.cancel();
        return state && TERMINAL.includes(state.status ?? '') ? state : null;
      }
      for await (const raw of sseEvents(res.body as unknown as AsyncIterable<Uint8Array>)) {
        if (raw.event !== 'state' && raw.event !== 'log') continue;
        const e = { event: raw.event, id: raw.id ?? '', data: JSON.parse(raw.data) } as OperationEvent<Op>;
        last = raw.id ?? last;
        failures = 0;
        if (e.event === 'state') state = e.data;
        onEvent(e);
      }
      if (state && TERMINAL.includes(state.status ?? '')) return state;
    } catch (err) {
      if (++failures > retries) throw err;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}
