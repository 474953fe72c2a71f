import { EntitySchema } from '@mikro-orm/core';

/** A project's data key for its environment values, wrapped by the master key `keyId` (never stored in the clear). */
export class ProjectKey {
  projectId!: string;
  keyId!: string;
  wrapped!: string;
  createdAt!: Date;
  updatedAt!: Date;
}

export const ProjectKeySchema = new EntitySchema<ProjectKey>({
  class: ProjectKey,
  tableName: 'project_keys',
  properties: {
    projectId: { type: 'uuid', primary: true },
    keyId: { type: 'string', length: 64, index: true },
    wrapped: { type: 'text' },
    createdAt: { type: 'Date' },
    updatedAt: { type: 'Date' },
  },
});
