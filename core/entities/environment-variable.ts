import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/**
 * One value of an environment variable of a project, for one target: sealed with the project's data key, bound to
 * project and name (and target, unless `all`).
 */
export class EnvironmentVariable {
  id: string = randomUUID();
  projectId!: string;
  name!: string;
  /** `build`, `runtime` or `both`. */
  scope: string = 'both';
  /** `all`, `production` or `preview`: which deployments take this value (variable-rules' TARGETS). */
  target: string = 'all';
  ciphertext!: string;
  /** Keyed digest of the value (HMAC-SHA-256 under a key derived from the project's data key). */
  digest!: string;
  createdAt!: Date;
  updatedAt!: Date;
}

export const EnvironmentVariableSchema = new EntitySchema<EnvironmentVariable>({
  class: EnvironmentVariable,
  tableName: 'environment_variables',
  uniques: [{ properties: ['projectId', 'name', 'target'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    projectId: { type: 'uuid' },
    name: { type: 'string', length: 255 },
    scope: { type: 'string', length: 16 },
    target: { type: 'string', length: 16, default: 'all' },
    ciphertext: { type: 'text' },
    digest: { type: 'string', length: 100 },
    createdAt: { type: 'Date' },
    updatedAt: { type: 'Date' },
  },
});
