import type { EntityManager } from '@mikro-orm/core';
import { Readable } from 'node:stream';
import { Build } from '../entities/build.js';
import { BuildLogChunk } from '../entities/build-log-chunk.js';
import { Operation } from '../entities/operation.js';
import { Project } from '../entities/project.js';
import type { Clock } from '../ports/clock.js';
import type { Storage } from '../ports/storage.js';
import { token } from '../tokens.js';

export const LOG_RETENTION = token<LogRetention>('hoist.LogRetention');

/** Chunk rows read at once. */
const BATCH = 200;
const TERMINAL = ['succeeded', 'failed', 'canceled'];
const DAY_MS = 24 * 3600 * 1000;

/**
 * Keeps build-log lines in the database (`build_log_chunks`) only while they are worth it: the lines of
 * an operation that finished more than `days` ago give way, build by build, to one row saying they are in
 * the build's stored log (LogChunks then reads them there, numbered as before), so the table holds the
 * recent operations' lines and one row per older build. A build whose log was never stored (its worker
 * died) gets it stored from its lines first.
 */
export class LogRetention {
  constructor(
    private readonly em: EntityManager,
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly days: number,
  ) {}

  /**
   * Moves the lines of operations finished more than `days` ago out of the database, build by build, oldest
   * lines first, until none is left or `stopped()`; returns how many builds' lines it moved.
   */
  async sweep(stopped: () => boolean = () => false): Promise<number> {
    const cutoff = new Date(this.clock.now().getTime() - this.days * DAY_MS);
    let moved = 0;
    let after = new Date(0);
    while (!stopped()) {
      const rows = await this.em
        .fork()
        .find(
          BuildLogChunk,
          { inStorage: false, createdAt: { $gte: after, $lt: cutoff } },
          { fields: ['operationId', 'buildId', 'createdAt'], orderBy: { createdAt: 'asc' }, limit: BATCH },
        );
      const due = await this.finished([...new Set(rows.map((r) => r.operationId))], cutoff);
      const builds = new Set(rows.filter((r) => due.has(r.operationId)).map((r) => `${r.operationId} ${r.buildId}`));
      for (const key of builds) {
        const [operationId, buildId] = key.split(' ');
        if (await this.move(operationId, buildId)) moved++;
      }
      if (rows.length < BATCH) break;
      const last = rows[rows.length - 1].createdAt;
      after = last.getTime() === after.getTime() ? new Date(last.getTime() + 1) : last;
    }
    return moved;
  }

  /** Of `ids`, the operations that finished before `cutoff`, of a project not being deleted. */
  private async finished(ids: string[], cutoff: Date): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const em = this.em.fork();
    const ops = await em.find(
      Operation,
      { id: { $in: ids }, status: { $in: TERMINAL }, finishedAt: { $lt: cutoff } },
      { fields: ['projectId'] },
    );
    const projects = [...new Set(ops.map((o) => o.projectId).filter((p): p is string => p !== null))];
    const active = new Set(
      (await em.find(Project, { id: { $in: projects }, status: 'active' }, { fields: ['id'] })).map((p) => p.id),
    );
    return new Set(ops.filter((o) => o.projectId !== null && active.has(o.projectId)).map((o) => o.id));
  }

  /**
   * Replaces the build's chunks with one row naming their range, once its log is surely in Storage; false when it
   * had none left to move.
   */
  private async move(operationId: string, buildId: string): Promise<boolean> {
    const em = this.em.fork();
    const where = { operationId, buildId, inStorage: false as const };
    if (!(await em.count(BuildLogChunk, where))) return false;
    const build = await em.findOne(Build, { id: buildId });
    // A log FileRetention removed is not stored again from lines left behind.
    if (build && !build.logRemovedAt && !(build.logKey && (await this.storage.stat(build.logKey)))) {
      build.logKey ??= `logs/${operationId}/build-${buildId}.log`;
      await this.storage.put(build.logKey, Readable.from(this.text(where)));
      await em.flush();
    }
    return em.transactional(async (tx) => {
      const rows = await tx.find(BuildLogChunk, where, { fields: ['fromLine', 'toLine', 'createdAt'] });
      if (!rows.length) return false;
      await tx.nativeDelete(BuildLogChunk, where);
      // Lines of a build record that is gone have nothing to point at.
      if (build)
        await tx.insert(
          BuildLogChunk,
          Object.assign(new BuildLogChunk(), {
            operationId,
            buildId,
            fromLine: Math.min(...rows.map((r) => r.fromLine)),
            toLine: Math.max(...rows.map((r) => r.toLine)),
            lines: [],
            inStorage: true,
            createdAt: this.clock.now(),
          }),
        );
      return true;
    });
  }

  /** The text of the lines `where` finds, as BuildLog stores it: each line and a newline. */
  private async *text(where: { operationId: string; buildId: string; inStorage: false }): AsyncGenerator<Buffer> {
    let after = -1;
    for (;;) {
      const rows = await this.em
        .fork()
        .find(
          BuildLogChunk,
          { ...where, fromLine: { $gt: after } },
          { orderBy: { fromLine: 'asc' }, limit: BATCH, fields: ['fromLine', 'lines'] },
        );
      for (const r of rows) yield Buffer.from(r.lines.map((l) => `${l}\n`).join(''));
      if (rows.length < BATCH) return;
      after = rows[rows.length - 1].fromLine;
    }
  }
}
