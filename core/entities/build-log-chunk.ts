import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/**
 * Lines of a build log as they were written (redacted), so another process (the API streaming an
 * operation's events) can read them while the build runs. Lines are numbered across the operation
 * (every attempt's build continues the count): the chunk holds lines [fromLine, toLine).
 */
export class BuildLogChunk {
  id: string = randomUUID();
  operationId!: string;
  buildId!: string;
  fromLine!: number;
  toLine!: number;
  lines!: string[];
  createdAt!: Date;
}

export const BuildLogChunkSchema = new EntitySchema<BuildLogChunk>({
  class: BuildLogChunk,
  tableName: 'build_log_chunks',
  indexes: [{ properties: ['operationId', 'toLine'] }, { properties: ['buildId', 'toLine'] }],
  uniques: [{ properties: ['operationId', 'fromLine'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    operationId: { type: 'uuid' },
    buildId: { type: 'uuid' },
    fromLine: { type: 'integer' },
    toLine: { type: 'integer' },
    lines: { type: 'json' },
    createdAt: { type: 'datetime' },
  },
});
