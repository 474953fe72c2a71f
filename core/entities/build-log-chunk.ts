import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/**
 * Lines of a build log as they were written (redacted), so another process (the API streaming an
 * operation's events) can read them while the build runs. Lines are numbered across the operation
 * (every attempt's build continues the count): the chunk holds lines [fromLine, toLine). Once the
 * operation has long finished, a build's chunks give way to one with `inStorage` and no `lines`: its
 * lines [fromLine, toLine) are those of the build's stored log (LogRetention).
 */
export class BuildLogChunk {
  id: string = randomUUID();
  operationId!: string;
  buildId!: string;
  fromLine!: number;
  toLine!: number;
  lines!: string[];
  /** The lines are no longer here but in the build's stored log (`Build.logKey`), from its first line on. */
  inStorage = false;
  createdAt!: Date;
}

export const BuildLogChunkSchema = new EntitySchema<BuildLogChunk>({
  class: BuildLogChunk,
  tableName: 'build_log_chunks',
  indexes: [
    { properties: ['operationId', 'toLine'] },
    { properties: ['buildId', 'toLine'] },
    { properties: ['inStorage', 'createdAt'] },
  ],
  uniques: [{ properties: ['operationId', 'fromLine'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    operationId: { type: 'uuid' },
    buildId: { type: 'uuid' },
    fromLine: { type: 'integer' },
    toLine: { type: 'integer' },
    lines: { type: 'json' },
    inStorage: { type: 'boolean', default: false },
    createdAt: { type: 'Date' },
  },
});
