import { sleep } from './retrying-fetch.js';

/** Statuses an operation never leaves. */
export const TERMINAL_STATUSES = ['succeeded', 'failed', 'canceled'] as const;

export const isTerminal = (status: string | undefined) =>
  (TERMINAL_STATUSES as readonly (string | undefined)[]).includes(status);

export interface PollOptions<T> {
  /** First delay between polls, and the bound the delay grows to while nothing changes. */
  minMs?: number;
  maxMs?: number;
  /** What counts as a change that resets the delay (default: status, progress and current stage). */
  changeKey?: (op: T) => string;
  /** Called with every answer, the first and the last included. */
  onUpdate?: (op: T) => void;
  /** Stops polling (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

/**
 * Polls `get` until the operation's status is terminal and returns that last answer. The delay
 * grows by half each poll that shows no change (bounded by maxMs, with ±20 % jitter so many
 * clients do not poll in step) and falls back to minMs when something moved.
 */
export async function pollUntilTerminal<
  T extends { status?: string; progress?: number; current_stage?: string | null },
>(get: () => Promise<T>, options: PollOptions<T> = {}): Promise<T> {
  const minMs = options.minMs ?? 1000;
  const maxMs = options.maxMs ?? 10_000;
  const random = options.random ?? Math.random;
  const wait = options.sleep ?? sleep;
  let delay = minMs;
  let last = '';
  for (;;) {
    options.signal?.throwIfAborted();
    const op = await get();
    options.onUpdate?.(op);
    if (isTerminal(op.status)) return op;
    const seen = (options.changeKey ?? defaultKey)(op);
    delay = seen === last ? Math.min(maxMs, delay * 1.5) : minMs;
    last = seen;
    await wait(Math.round(delay * (0.8 + 0.4 * random())));
  }
}

const defaultKey = (op: { status?: string; progress?: number; current_stage?: string | null }) =>
  `${op.status}|${op.progress}|${op.current_stage}`;
