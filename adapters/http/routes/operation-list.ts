import type { FastifyPluginAsync } from 'fastify';
import {
  OPERATION_KINDS,
  OPERATION_LIST,
  OPERATION_STATUSES,
  type OperationFilter,
  type OperationList,
} from '../../../core/deployments/operation-list.js';
import { bearer, principalOf } from '../auth.js';
import { pageOf, PageQuery } from '../record-schemas.js';
import { errorResponses, Uuid } from '../schemas.js';
import type { RouteOptions } from './index.js';
import { OperationSchema } from './operations.js';

/** Operations: the account's list (the fourth Operations call, beside get, cancel and retry). */
const operationList: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const operations = kernel.get<OperationList>(OPERATION_LIST);
  app.addHook('onRequest', app.authenticate);

  app.get<{ Querystring: OperationFilter }>(
    '/operations',
    {
      schema: {
        tags: ['Operations'],
        summary: "List the account's operations, newest first",
        description:
          'Deployments and project deletions of the account, newest first, cursor-paginated: pass ' +
          'next_cursor back unchanged as cursor until it is null. Each item is the operation as GET ' +
          '/operations/{operationID} shows it. Filters combine (and): project_id (a project of another ' +
          'account answers 404 like a missing one), status, kind. A bad cursor, limit, status, kind or ' +
          'project_id answers 400 invalid_request with details.field.',
        security: bearer,
        querystring: {
          ...PageQuery,
          properties: {
            ...PageQuery.properties,
            project_id: { ...Uuid, description: "Only this project's operations." },
            status: { type: 'string', enum: [...OPERATION_STATUSES], description: 'Only operations with this status.' },
            kind: { type: 'string', enum: [...OPERATION_KINDS], description: 'Only operations of this kind.' },
          },
          additionalProperties: false,
        },
        response: { 200: pageOf('operations', OperationSchema), ...errorResponses(400, 401, 404) },
      },
    },
    async (req) => {
      const page = await operations.list(principalOf(req).accountId, req.query);
      return { operations: page.items, next_cursor: page.nextCursor };
    },
  );
};

export default operationList;
