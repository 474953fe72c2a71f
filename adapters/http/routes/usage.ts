import type { FastifyPluginAsync } from 'fastify';
import { HOURLY_DAYS, USAGE_DAYS, USAGE_SERVICE, type UsageService } from '../../../core/usage/usage-service.js';
import { bearer, principalOf } from '../auth.js';
import { errorResponses, Timestamp, Uuid } from '../schemas.js';
import type { RouteOptions } from './index.js';

const Figures = {
  requests: { type: 'integer', description: 'Answers the edge gave for the project (any status).' },
  bytes: { type: 'integer', description: 'Bytes the edge wrote to clients for them, headers included.' },
  status: {
    type: 'object',
    required: ['2xx', '3xx', '4xx', '5xx'],
    properties: Object.fromEntries(['2xx', '3xx', '4xx', '5xx'].map((k) => [k, { type: 'integer' }])),
  },
} as const;

const Usage = {
  type: 'object',
  required: ['project_id', 'granularity', 'from', 'to', 'totals', 'buckets'],
  properties: {
    project_id: Uuid,
    granularity: { type: 'string', enum: ['day', 'hour'] },
    from: { ...Timestamp, description: 'Start of the first bucket.' },
    to: { ...Timestamp, description: 'End of the last bucket (the end of the current hour).' },
    totals: { type: 'object', required: ['requests', 'bytes', 'status'], properties: Figures },
    buckets: {
      type: 'array',
      description: 'One per day or hour (UTC), oldest first, none missing; the last is the current one.',
      items: {
        type: 'object',
        required: ['start', 'requests', 'bytes', 'status'],
        properties: { start: Timestamp, ...Figures },
      },
    },
  },
} as const;

/** Usage: what the edge served for a project, by day or hour. */
const usage: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const service = kernel.get<UsageService>(USAGE_SERVICE);
  app.addHook('onRequest', app.authenticate);

  app.get<{ Params: { projectID: string }; Querystring: { days?: number; granularity?: string } }>(
    '/projects/:projectID/usage',
    {
      schema: {
        tags: ['Usage'],
        summary: 'Project usage',
        description:
          'What the edge served for the project (its hosts, previews and custom domains): answers by status class ' +
          'and bytes, per UTC day or hour, with totals. Every edge process adds its counts every ' +
          'edgeUsageFlushSeconds (60 by default), so the current bucket trails by up to that much. ' +
          `Kept ${USAGE_DAYS} days; nothing about a visitor is kept. A bad days or granularity → 400; another ` +
          "account's project → 404.",
        security: bearer,
        params: {
          type: 'object',
          required: ['projectID'],
          properties: { projectID: { type: 'string', description: 'Project id (UUID).' } },
        },
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            days: {
              type: 'integer',
              minimum: 1,
              maximum: USAGE_DAYS,
              default: 7,
              description: `Days back, today included (at most ${HOURLY_DAYS} by hour).`,
            },
            granularity: { type: 'string', enum: ['day', 'hour'], default: 'day' },
          },
        },
        response: { 200: Usage, ...errorResponses(400, 401, 404) },
      },
    },
    async (req) => service.view(principalOf(req).accountId, req.params.projectID, req.query),
  );
};

export default usage;
