import type { EntityManager } from '@mikro-orm/core';
import { Build } from '../entities/build.js';
import { invalid, notFound } from '../errors.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import { token } from '../tokens.js';
import { OPERATIONS_CHANNEL, type LogChunks } from './log-chunks.js';
import type { OperationView, OperationViews } from './operation-views.js';

export const OPERATION_EVENTS = token<OperationEvents>('hoist.OperationEvents');

/**
 * Where a stream stands: the operation's revision its last `state` event showed (-1: none yet) and
 * how many of its build-log lines it has had. An event's id is `<revision>.<lines>` after it, so
 * `Last-Event-ID` resumes with nothing missed and nothing repeated.
 */
export interface EventCursor {
  revision: number;
  line: number;
}

/** One event: `state` (the operation as GET shows it) or `log` (build-log lines from line `from`). */
export type StreamEvent =
  | { event: 'state'; id: string; data: OperationView }
  | { event: 'log'; id: string; data: { build_id: string; from: number; lines: string[] } };

const TERMINAL = ['succeeded', 'failed', 'canceled'];

/** The view as JSON without what a heartbeat changes (heartbeat times, updated_at). */
const withoutHeartbeats = (view: OperationView) =>
  JSON.stringify({
    ...view,
    updated_at: null,
    stages: Object.fromEntries(
      Object.entries(view.stages).map(([k, v]) => [k, { ...(v as object), heartbeat_at: null }]),
    ),
  });

/** `<attempt>|<status>` of a deployment operation's build stage (null for another kind). */
function buildMark(state: Record<string, unknown> | null | undefined): string | null {
  const s = state as { attempt?: number; stages?: { build?: { status?: string } } } | null | undefined;
  const status = s?.stages?.build?.status;
  return status === undefined ? null : `${s!.attempt}|${status}`;
}

/** The id of the event that leaves a stream at `c`. */
export const eventId = (c: EventCursor) => `${c.revision}.${c.line}`;

/** The cursor of a Last-Event-ID (absent: the start); anything but an id of this stream is invalid_request. */
export function parseEventId(id: string | undefined): EventCursor {
  if (id === undefined || id === '') return { revision: -1, line: 0 };
  const m = /^(-1|\d{1,9})\.(\d{1,9})$/.exec(id.trim());
  if (!m) throw invalid('Last-Event-ID is not an event id of this stream', { field: 'Last-Event-ID' });
  return { revision: Number(m[1]), line: Number(m[2]) };
}

/** The line count of a build-log stream's Last-Event-ID (absent: 0); anything else is invalid_request. */
export function parseLineId(id: string | undefined): number {
  if (id === undefined || id === '') return 0;
  if (!/^\d{1,9}$/.test(id.trim()))
    throw invalid('Last-Event-ID is not an event id of this stream', { field: 'Last-Event-ID' });
  return Number(id.trim());
}

/** Waits for a change of `key` on the change feed, at most `ms`, or until `signal` aborts. */
class Wakeup {
  private pending = false;
  private wake: (() => void) | null = null;
  private readonly stop: () => void;
  constructor(changes: ChangeFeed, key: string) {
    this.stop = changes.subscribe(OPERATIONS_CHANNEL, (k) => {
      if (k !== null && k !== key) return;
      this.pending = true;
      this.wake?.();
    });
  }

  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.pending || signal.aborted) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wake = null;
        this.pending = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }

  close(): void {
    this.stop();
    this.wake?.();
  }
}

/**
 * An operation's live events, read from the database in whatever process runs the API: a `state`
 * event whenever its revision moved (changes in between may coalesce into one; a move by a stage's
 * heartbeat alone is not sent), its build-log
 * lines as the worker writes them, then the end at the terminal state (logs first, the final state
 * last). The change feed wakes a stream at once; it also looks every `pollMs`, so a lost
 * notification (or a process without a shared feed) only delays.
 */
export class OperationEvents {
  constructor(
    private readonly em: EntityManager,
    private readonly viewsOn: (em: EntityManager) => Pick<OperationViews, 'find' | 'view'>,
    private readonly logs: Pick<LogChunks, 'after' | 'afterInBuild'>,
    private readonly changes: ChangeFeed,
    private readonly pollMs = 1000,
  ) {}

  /** The operation's events after `from`, until it is terminal and all were given, or `signal` aborts. */
  async *operation(accountId: string, id: string, from: EventCursor, signal: AbortSignal): AsyncGenerator<StreamEvent> {
    const at = { ...from };
    let shown = '';
    let seen = '';
    // The build stage's attempt and status when a read of the lines found none new with the build not running.
    let quiet: string | null = null;
    const wakeup = new Wakeup(this.changes, id);
    try {
      while (!signal.aborted) {
        const views = this.viewsOn(this.em.fork());
        // Read before the lines: a terminal operation's lines are all written by then.
        const op = await views.find(accountId, id);
        if (!op) throw notFound('Operation');
        const done = TERMINAL.includes(op.status);
        const build = buildMark(op.state);
        let more = false;
        let gap = false;
        // Lines are written while the build stage runs, or with its end: with the build as it was when a read found
        // none new, there are none to read.
        for await (const chunk of build !== null && build === quiet ? [] : this.logs.after(id, at.line)) {
          // A missing stretch is still being written (unless nothing more will come): wait for it.
          if (chunk.from > at.line && !done) {
            gap = true;
            break;
          }
          const lines = chunk.lines.slice(Math.max(0, at.line - chunk.from));
          at.line = chunk.from + chunk.lines.length;
          more = true;
          yield {
            event: 'log',
            id: eventId(at),
            data: { build_id: chunk.buildId, from: at.line - lines.length, lines },
          };
        }
        quiet = !more && !gap && build !== null && !build.endsWith('|running') ? build : null;
        // A project deletion moves its operation without a revision: any other change shows too.
        const sig = `${op.revision}|${op.status}|${op.progress}|${new Date(op.updatedAt).getTime()}`;
        const moved = op.revision > at.revision || (seen !== '' && sig !== seen);
        seen = sig;
        if (moved) {
          at.revision = Math.max(at.revision, op.revision);
          const view = await views.view(op);
          // A stage's heartbeat alone moves the revision every few seconds: not worth an event, unless it is the last.
          const key = withoutHeartbeats(view);
          if (key !== shown || done) yield { event: 'state', id: eventId(at), data: view };
          shown = key;
        }
        if (done && !more) return;
        if (!more) await wakeup.wait(this.pollMs, signal);
      }
    } finally {
      wakeup.close();
    }
  }

  /**
   * The log lines of the account's build after line `from` (numbered across its operation), until
   * the build has ended and all were given, or `signal` aborts.
   */
  async *buildLog(
    accountId: string,
    projectId: string,
    buildId: string,
    from: number,
    signal: AbortSignal,
  ): AsyncGenerator<StreamEvent> {
    let line = from;
    const first = await this.em.fork().findOne(Build, { id: buildId, accountId, projectId });
    if (!first) throw notFound('Build');
    const wakeup = new Wakeup(this.changes, first.operationId);
    try {
      while (!signal.aborted) {
        const build = await this.em.fork().findOneOrFail(Build, { id: buildId });
        let more = false;
        for await (const chunk of this.logs.afterInBuild(buildId, line)) {
          const lines = chunk.lines.slice(Math.max(0, line - chunk.from));
          line = chunk.from + chunk.lines.length;
          more = true;
          yield { event: 'log', id: String(line), data: { build_id: buildId, from: line - lines.length, lines } };
        }
        if (build.status !== 'running' && !more) return;
        if (!more) await wakeup.wait(this.pollMs, signal);
      }
    } finally {
      wakeup.close();
    }
  }
}
