import type { FastifyPluginAsync } from 'fastify';
import { RECORDS_SERVICE, type RecordsService } from '../../../core/deployments/records-service.js';
import { bearer, principalOf } from '../auth.js';
import { DeploymentRecord, pageOf, PageQuery, recordParams } from '../record-schemas.js';
import { retryRoute } from '../retry-route.js';
import { errorResponses } from '../schemas.js';
import type { RouteOptions } from './index.js';

/** Deployments: a project's deployment records, and deployment retries (redeploys). */
const deployments: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const records = kernel.get<RecordsService>(RECORDS_SERVICE);
  app.addHook('onRequest', app.authenticate);

  app.get<{ Params: { projectID: string }; Querystring: { cursor?: string; limit: number } }>(
    '/projects/:projectID/deployments',
    {
      schema: {
        tags: ['Deployments'],
        summary: 'List the deployments of a project',
        description:
          'Deployments (runs of the Deploy stage, live or not), newest first, ' +
          'cursor-paginated: pass next_cursor back unchanged as cursor until it is null. ' +
          'A project of another account answers 404 like a missing one.',
        security: bearer,
        params: recordParams(),
        querystring: PageQuery,
        response: { 200: pageOf('deployments', DeploymentRecord), ...errorResponses(400, 401, 404) },
      },
    },
    async (req) => {
      const page = await records.deploymentList(principalOf(req).accountId, req.params.projectID, req.query);
      return { deployments: page.items, next_cursor: page.nextCursor };
    },
  );

  app.get<{ Params: { projectID: string; deploymentID: string } }>(
    '/projects/:projectID/deployments/:deploymentID',
    {
      schema: {
        tags: ['Deployments'],
        summary: 'Read a deployment',
        description:
          'Status (running, live, superseded, failed, canceled), URL, build, version, ' +
          'operation, whether it is live now, and when it went live and ended. ' +
          "Another account's deployment and a malformed id answer 404 like a missing one.",
        security: bearer,
        params: recordParams('deploymentID'),
        response: { 200: DeploymentRecord, ...errorResponses(401, 404) },
      },
    },
    async (req) => records.deployment(principalOf(req).accountId, req.params.projectID, req.params.deploymentID),
  );

  retryRoute(app, kernel, {
    path: '/projects/:projectID/deployments/:deploymentID/retry',
    param: 'deploymentID',
    tag: 'Deployments',
    summary: 'Retry a deployment (redeploy its build)',
    description:
      "Starts a NEW deployment operation that deploys the same build's artifact again, " +
      'without rebuilding: its Analyze and Build stages are `skipped` (reused) from the ' +
      'start and Deploy runs at once (progress starts at 70). ' +
      'The new deployment record has the same build_id. Use it to bring back an earlier ' +
      'release or to re-run a failed Deploy; a build without an artifact is refused ' +
      'with 409 not_retryable (retry the build instead), and so is one whose artifact was removed (details.reason ' +
      'artifact_removed, see artifact_removed_at on the build). ' +
      'The answer has action deployment_retry_queued.',
    action: 'deployment_retry_queued',
    retry: (accountId, projectId, id, by) => records.retryDeployment(accountId, projectId, id, by),
  });
};

export default deployments;
