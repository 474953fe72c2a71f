import { EntitySchema } from '@mikro-orm/core';

/**
 * The environment one deployment runs with, taken once when it first needs it: the variables
 * (names, scopes, values) sealed as one value with the project's data key, bound to project and
 * operation. Retries and restores of that deployment read it, so later changes wait for the next one.
 */
export class EnvironmentSnapshot {
  operationId!: string;
  projectId!: string;
  /** Null when the project had no variables. */
  sealed: string | null = null;
  /**
   * The project had a value for one target only (production or preview) when it was taken: what this deployment
   * got depends on whether it was a preview, so a preview of it is not promoted as it runs.
   */
  targeted: boolean = false;
  createdAt!: Date;
}

export const EnvironmentSnapshotSchema = new EntitySchema<EnvironmentSnapshot>({
  class: EnvironmentSnapshot,
  tableName: 'environment_snapshots',
  properties: {
    operationId: { type: 'uuid', primary: true },
    projectId: { type: 'uuid', index: true },
    sealed: { type: 'text', nullable: true },
    targeted: { type: 'boolean', default: false },
    createdAt: { type: 'Date' },
  },
});
