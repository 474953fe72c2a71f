import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** Build settings a project may set; each overrides what Analyze detects. */
export interface BuildSettings {
  root_directory?: string;
  install_command?: string;
  build_command?: string;
  start_command?: string;
  output_directory?: string;
  node_version?: string;
  framework?: string;
  runtime?: string;
}

/** A project: a named slot of an account, served at `<slug>.<appsDomain>`. */
export class Project {
  id: string = randomUUID();
  accountId!: string;
  name!: string;
  /** URL-safe, unique across the service. */
  slug!: string;
  /** `draft`, `public` or `private`. */
  visibility: string = 'draft';
  settings: BuildSettings = {};
  /** argon2id hash of the access password of a private project's site, or null. */
  accessPasswordHash: string | null = null;
  /** `active` or `deleting`; a deleting project is gone from the API. */
  status: string = 'active';
  /**
   * Who sees the project's previews: `private` (behind the project's gate: its access password or grants) or
   * `public` (anyone with the URL; never indexed).
   */
  previewVisibility: string = 'private';
  /** The deployment the edge serves; switched in one write, so a release goes live atomically. */
  liveDeploymentId: string | null = null;
  /** The deployment chain now running; set by compare-and-set, so only one chain runs per project. */
  activeOperationId: string | null = null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const ProjectSchema = new EntitySchema<Project>({
  class: Project,
  tableName: 'projects',
  indexes: [{ properties: ['accountId', 'createdAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    accountId: { type: 'uuid' },
    name: { type: 'string', length: 100 },
    slug: { type: 'string', length: 63, unique: true },
    visibility: { type: 'string', length: 16 },
    settings: { type: 'json' },
    accessPasswordHash: { type: 'string', length: 255, nullable: true },
    status: { type: 'string', length: 16 },
    previewVisibility: { type: 'string', length: 16, default: 'private' },
    liveDeploymentId: { type: 'uuid', nullable: true },
    activeOperationId: { type: 'uuid', nullable: true },
    createdAt: { type: 'Date' },
    updatedAt: { type: 'Date' },
  },
});
