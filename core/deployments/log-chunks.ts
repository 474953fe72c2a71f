import type { EntityManager } from '@mikro-orm/core';
import { BuildLogChunk } from '../entities/build-log-chunk.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import type { Clock } from '../ports/clock.js';
import { token } from '../tokens.js';

export const LOG_CHUNKS = token<LogChunks>('hoist.LogChunks');

/**
 * The change-feed channel an operation's changes (state, new log lines) are announced on, keyed by its id; keyed
 * `projectOperations(id)` when what other operations of the project show may have changed too (one finished: its
 * release may be the live one now).
 */
export const OPERATIONS_CHANNEL = 'operations';

/** The `operations` key of every operation of a project. */
export const projectOperations = (projectId: string) => `project:${projectId}`;

/** Consecutive lines of an operation's build log: `lines[0]` is line `from` (0-based, across the operation). */
export interface LogLines {
  buildId: string;
  from: number;
  lines: string[];
}

/** Appends a build's lines as they come, in order; a failed write is made up by the next. */
export interface LogChunkWriter {
  /** Queues `lines` and writes everything queued as one chunk after the writes before it. */
  append(lines: string[]): Promise<void>;
}

const READ_ROWS = 50;

/**
 * Build log lines as written, in the database, so every process reads them while the build runs
 * (the full log goes to Storage at the end). Writes are bounded by the writer's caller (about one
 * chunk a second, none past the log's 5 MB); each is announced on the change feed.
 */
export class LogChunks {
  constructor(
    private readonly em: EntityManager,
    private readonly clock: Clock,
    private readonly changes: ChangeFeed,
  ) {}

  /** A writer for build `buildId` of `operationId`, numbering its lines after the operation's earlier builds'. */
  writer(operationId: string, buildId: string): LogChunkWriter {
    let next: number | null = null;
    let queued: string[] = [];
    let tail: Promise<void> = Promise.resolve();
    const write = async () => {
      if (!queued.length) return;
      const em = this.em.fork();
      if (next === null) {
        const last = await em.findOne(BuildLogChunk, { operationId }, { orderBy: { toLine: 'desc' } });
        next = last?.toLine ?? 0;
      }
      const lines = queued;
      queued = [];
      const chunk = Object.assign(new BuildLogChunk(), {
        operationId,
        buildId,
        fromLine: next,
        toLine: next + lines.length,
        lines,
        createdAt: this.clock.now(),
      });
      try {
        await em.persist(chunk).flush();
      } catch (err) {
        queued = [...lines, ...queued];
        throw err;
      }
      next = chunk.toLine;
      await this.changes.publish(OPERATIONS_CHANNEL, operationId).catch(() => undefined);
    };
    return {
      append: (lines) => {
        queued.push(...lines);
        tail = tail.then(write, write);
        return tail;
      },
    };
  }

  /** The operation's lines from line `after` on (a bounded batch; ask again from its end for more). */
  async after(operationId: string, after: number): Promise<LogLines[]> {
    return this.read({ operationId }, after);
  }

  /** The lines of build `buildId` from line `after` (numbered across its operation) on, in bounded batches. */
  async afterInBuild(buildId: string, after: number): Promise<LogLines[]> {
    return this.read({ buildId }, after);
  }

  private async read(where: { operationId: string } | { buildId: string }, after: number): Promise<LogLines[]> {
    const rows = await this.em
      .fork()
      .find(BuildLogChunk, { ...where, toLine: { $gt: after } }, { orderBy: { fromLine: 'asc' }, limit: READ_ROWS });
    return rows.map((r) => ({ buildId: r.buildId, from: r.fromLine, lines: r.lines }));
  }
}
