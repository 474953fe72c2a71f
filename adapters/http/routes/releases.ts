import type { FastifyPluginAsync } from 'fastify';
import { RECORDS_SERVICE, type RecordsService } from '../../../core/deployments/records-service.js';
import { bearer, principalOf } from '../auth.js';
import { DeploymentRecord, pageOf, PageQuery, recordParams, ReleaseDetail } from '../record-schemas.js';
import { errorResponses } from '../schemas.js';
import type { RouteOptions } from './index.js';

/** Releases: the history of a project's deployments that went live, and the aggregate release detail. */
const releases: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const records = kernel.get<RecordsService>(RECORDS_SERVICE);
  app.addHook('onRequest', app.authenticate);

  app.get<{ Params: { projectID: string }; Querystring: { cursor?: string; limit: number } }>(
    '/projects/:projectID/releases',
    {
      schema: {
        tags: ['Releases'],
        summary: 'List the release history of a project',
        description:
          'Deployments that went live (the current one has live: true; earlier ones are superseded), newest first, cursor-paginated: ' +
          'pass next_cursor back unchanged as cursor until it is null. A project of another account answers 404 like a missing one.',
        security: bearer,
        params: recordParams(),
        querystring: PageQuery,
        response: { 200: pageOf('releases', DeploymentRecord), ...errorResponses(400, 401, 404) },
      },
    },
    async (req) => {
      const page = await records.releases(principalOf(req).accountId, req.params.projectID, req.query);
      return { releases: page.items, next_cursor: page.nextCursor };
    },
  );

  app.get<{ Params: { projectID: string; deploymentID: string } }>(
    '/projects/:projectID/releases/:deploymentID',
    {
      schema: {
        tags: ['Releases'],
        summary: 'Read a release',
        description:
          'One release (a deployment that went live) with its version (size, SHA-256, Analyze summary), build (status, artifact, log summary), ' +
          'deployment (status, URL, live) and timings: upload time, Analyze, Build and Deploy durations from the operation\'s stage timestamps (null for a stage that did not run), and upload-to-live total. ' +
          'A deployment that never went live, another account\'s, and a malformed id answer 404.',
        security: bearer,
        params: recordParams('deploymentID'),
        response: { 200: ReleaseDetail, ...errorResponses(401, 404) },
      },
    },
    async (req) => records.release(principalOf(req).accountId, req.params.projectID, req.params.deploymentID),
  );
};

export default releases;
