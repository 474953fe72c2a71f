import { EntitySchema } from '@mikro-orm/core';

/**
 * What the edge served for one project in one hour (UTC): requests by status class and bytes sent. Each edge process
 * adds what it counted since its last flush, so the row is the sum of every edge's.
 */
export class ProjectUsage {
  projectId!: string;
  /** Hours since the Unix epoch (UTC): the hour the requests ended in. */
  hour!: number;
  requests = 0;
  /** Bytes written to clients, headers included. */
  bytes = 0;
  status2xx = 0;
  status3xx = 0;
  status4xx = 0;
  status5xx = 0;
}

export const ProjectUsageSchema = new EntitySchema<ProjectUsage>({
  class: ProjectUsage,
  tableName: 'project_usage',
  properties: {
    projectId: { type: 'uuid', primary: true },
    hour: { type: 'integer', primary: true },
    requests: { type: 'integer', default: 0 },
    bytes: { type: 'bigint', default: 0 },
    status2xx: { type: 'integer', default: 0 },
    status3xx: { type: 'integer', default: 0 },
    status4xx: { type: 'integer', default: 0 },
    status5xx: { type: 'integer', default: 0 },
  },
});
