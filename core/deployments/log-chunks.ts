import type { EntityManager } from '@mikro-orm/core';
import type { Readable } from 'node:stream';
import { Build } from '../entities/build.js';
import { BuildLogChunk } from '../entities/build-log-chunk.js';
import { HoistError } from '../errors.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import type { Clock } from '../ports/clock.js';
import type { Storage } from '../ports/storage.js';
import { token } from '../tokens.js';
import { insertRow, queryRows } from '../entities/plain-sql.js';

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

/** The number of the operation's next build-log line: after its lines so far (0 for none). */
async function nextLine(em: EntityManager, operationId: string): Promise<number> {
  const [row] = await queryRows<{ last: number | string | null }>(
    em,
    'select max(to_line) as last from build_log_chunks where operation_id = ?',
    [operationId],
  );
  return Number(row?.last ?? 0);
}

/** Appends a build's lines as they come, in order; a failed write is made up by the next. */
export interface LogChunkWriter {
  /** Queues `lines` and writes everything queued as one chunk after the writes before it. */
  append(lines: string[]): Promise<void>;
}

const READ_ROWS = 50;
/** Lines of a stored log given at once, when a build's lines are read back from Storage. */
const STORED_LINES = 1000;

/**
 * Build log lines as written, in the database, so every process reads them while the build runs
 * (the full log goes to Storage at the end). Writes are bounded by the writer's caller (about one
 * chunk a second, none past the log's 5 MB); each is announced on the change feed. Lines that
 * LogRetention moved out of the database are read from the build's stored log, numbered as before.
 */
export class LogChunks {
  constructor(
    private readonly em: EntityManager,
    private readonly clock: Clock,
    private readonly changes: ChangeFeed,
    private readonly storage: Pick<Storage, 'get'>,
  ) {}

  /** A writer for build `buildId` of `operationId`, numbering its lines after the operation's earlier builds'. */
  writer(operationId: string, buildId: string): LogChunkWriter {
    let next: number | null = null;
    let queued: string[] = [];
    let tail: Promise<void> = Promise.resolve();
    const write = async () => {
      if (!queued.length) return;
      const em = this.em.fork();
      next ??= await nextLine(em, operationId);
      const lines = queued;
      queued = [];
      const chunk = this.chunk(operationId, buildId, next, lines);
      try {
        await em.insert(BuildLogChunk, chunk);
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

  /**
   * Writes `lines` of build `buildId` as one chunk in `tx` (the transaction that records the build: one done inline,
   * see StageImpl.inline), after the operation's lines so far. The commit's announcement of the operation wakes its
   * event streams.
   */
  async appendWithin(tx: EntityManager, operationId: string, buildId: string, lines: string[]): Promise<void> {
    if (lines.length)
      await insertRow(tx, BuildLogChunk, this.chunk(operationId, buildId, await nextLine(tx, operationId), lines));
  }

  /** The chunk of `lines` from line `from` on. */
  private chunk(operationId: string, buildId: string, from: number, lines: string[]): BuildLogChunk {
    return Object.assign(new BuildLogChunk(), {
      operationId,
      buildId,
      fromLine: from,
      toLine: from + lines.length,
      lines,
      createdAt: this.clock.now(),
    });
  }

  /** The operation's lines from line `after` on, in order (a bounded batch; ask again from its end for more). */
  after(operationId: string, after: number): AsyncGenerator<LogLines> {
    return this.read({ operationId }, after);
  }

  /** The lines of build `buildId` from line `after` (numbered across its operation) on, in bounded batches. */
  afterInBuild(buildId: string, after: number): AsyncGenerator<LogLines> {
    return this.read({ buildId }, after);
  }

  /**
   * The chunks `where` names holding lines from `after` on, in order: a plain query, then the ORM's mapping of its
   * rows (every poll and every wake of an event stream reads them, and `find` cost several times that).
   */
  private async *read(where: { operationId: string } | { buildId: string }, after: number): AsyncGenerator<LogLines> {
    const [column, id] = 'operationId' in where ? ['operation_id', where.operationId] : ['build_id', where.buildId];
    const em = this.em.fork();
    const rows = await queryRows<Record<string, unknown>>(
      em,
      `select * from build_log_chunks where ${column} = ? and to_line > ? order by from_line asc limit ?`,
      [id, after, READ_ROWS],
    );
    for (const row of rows) {
      const chunk = em.map(BuildLogChunk, row);
      if (chunk.inStorage) yield* this.stored(chunk, after);
      else yield { buildId: chunk.buildId, from: chunk.fromLine, lines: chunk.lines };
    }
  }

  /**
   * The lines [fromLine, toLine) of `moved`, from line `after` on, read from its build's stored log as it streams
   * (STORED_LINES at a time); none when that log is not there.
   */
  private async *stored(moved: BuildLogChunk, after: number): AsyncGenerator<LogLines> {
    const build = await this.em.fork().findOne(Build, { id: moved.buildId }, { fields: ['logKey'] });
    const body = build?.logKey
      ? await this.storage.get(build.logKey).catch((err) => {
          if (err instanceof HoistError && err.code === 'not_found') return null;
          throw err;
        })
      : null;
    if (!body) return;
    try {
      let line = moved.fromLine;
      let batch: string[] = [];
      for await (const text of linesOf(body)) {
        if (line >= moved.toLine) break;
        if (line++ < after) continue;
        batch.push(text);
        if (batch.length === STORED_LINES) {
          yield { buildId: moved.buildId, from: line - batch.length, lines: batch };
          batch = [];
        }
      }
      if (batch.length) yield { buildId: moved.buildId, from: line - batch.length, lines: batch };
    } finally {
      body.destroy();
    }
  }
}

/** The `\n`-separated lines of UTF-8 text as it streams (a `\r` stays in its line, as the build wrote it). */
async function* linesOf(body: Readable): AsyncGenerator<string> {
  body.setEncoding('utf8');
  let rest = '';
  for await (const text of body as AsyncIterable<string>) {
    const lines = (rest + text).split('\n');
    rest = lines.pop()!;
    yield* lines;
  }
  if (rest) yield rest;
}
