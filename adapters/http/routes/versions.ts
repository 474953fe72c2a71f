import type { FastifyPluginAsync } from 'fastify';
import { RECORDS_SERVICE, type RecordsService } from '../../../core/deployments/records-service.js';
import { bearer, principalOf } from '../auth.js';
import { pageOf, PageQuery, recordParams, VersionRecord } from '../record-schemas.js';
import { errorResponses } from '../schemas.js';
import type { RouteOptions } from './index.js';

/** Versions: the archives uploaded to a project, and what Analyze detected in them. */
const versions: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const records = kernel.get<RecordsService>(RECORDS_SERVICE);
  app.addHook('onRequest', app.authenticate);

  app.get<{ Params: { projectID: string }; Querystring: { cursor?: string; limit: number } }>(
    '/projects/:projectID/versions',
    {
      schema: {
        tags: ['Versions'],
        summary: 'List the versions of a project',
        description:
          'Uploaded versions, newest first, cursor-paginated: pass next_cursor back ' +
          'unchanged as cursor until it is null. ' +
          'A project of another account answers 404 like a missing one.',
        security: bearer,
        params: recordParams(),
        querystring: PageQuery,
        response: { 200: pageOf('versions', VersionRecord), ...errorResponses(400, 401, 404) },
      },
    },
    async (req) => {
      const page = await records.versions(principalOf(req).accountId, req.params.projectID, req.query);
      return { versions: page.items, next_cursor: page.nextCursor };
    },
  );

  app.get<{ Params: { projectID: string; versionID: string } }>(
    '/projects/:projectID/versions/:versionID',
    {
      schema: {
        tags: ['Versions'],
        summary: 'Read a version',
        description:
          'The archive (filename, size, SHA-256), its upload options and the Analyze ' +
          "result. Another account's version and a malformed id answer 404 like a missing " +
          'one.',
        security: bearer,
        params: recordParams('versionID'),
        response: { 200: VersionRecord, ...errorResponses(401, 404) },
      },
    },
    async (req) => records.version(principalOf(req).accountId, req.params.projectID, req.params.versionID),
  );
};

export default versions;
