import type { FastifyPluginAsync } from 'fastify';
import { RECORDS_SERVICE, type RecordsService } from '../../../core/deployments/records-service.js';
import { RELEASE_LOG_LINES_MAX as LOG_LINES_MAX } from '../../../core/ports/deployer.js';
import { bearer, principalOf } from '../auth.js';
import { DeploymentRecord, pageOf, PageQuery, recordParams } from '../record-schemas.js';
import { retryRoute } from '../retry-route.js';
import { runtimeLog } from '../runtime-log.js';
import { errorResponses } from '../schemas.js';
import type { RouteOptions } from './index.js';

/** A deployment's runtime log, as the logs route answers it. */
const RuntimeLog = {
  type: 'object',
  required: ['deployment_id', 'kept', 'lines'],
  properties: {
    deployment_id: { type: 'string', format: 'uuid' },
    kept: { type: 'boolean', description: 'false: nothing is kept for this deployment (a static release, say).' },
    lines: {
      type: 'array',
      items: {
        type: 'object',
        required: ['at', 'text'],
        properties: {
          at: { type: 'string', format: 'date-time', description: 'When the app printed it.' },
          text: { type: 'string' },
        },
      },
    },
  },
} as const;

/** Deployments: a project's deployment records, their runtime logs, and deployment retries (redeploys). */
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

  app.get<{ Params: { projectID: string; deploymentID: string }; Querystring: { lines: number } }>(
    '/projects/:projectID/deployments/:deploymentID/logs',
    {
      schema: {
        tags: ['Deployments'],
        summary: "Read a deployment's runtime log (what its Node.js app printed)",
        description:
          'The last `lines` lines (100 by default, at most 1,000) the Node.js app of this deployment printed on ' +
          'stdout and stderr, oldest first, each with the time it was printed: while it runs, and after it ' +
          'stopped until its release is removed (across restarts after a crash, whose output follows on). ' +
          '`kept` is false, with no lines, when nothing is kept: a static release, which runs nothing, a ' +
          'release removed or never started, or a deployer that keeps no output. Lines are cut at 2,000 ' +
          'characters; an app that prints more than 64 KiB a second has the rest counted in a line of ' +
          "Hoist's (`[hoist] N lines were not kept`), and at most about 1 MiB is kept a release (deployer-local; " +
          "deployer-docker and -pulumi read the container's own log, which goes with the container: a replaced " +
          "release's once drained). The app's output is shown as it " +
          'printed it: environment values it prints are not masked. ' +
          "Another account's deployment and a malformed id answer 404 like a missing one.",
        security: bearer,
        params: recordParams('deploymentID'),
        querystring: {
          type: 'object',
          properties: {
            lines: { type: 'integer', minimum: 1, maximum: LOG_LINES_MAX, default: 100, description: 'How many.' },
          },
          additionalProperties: false,
        },
        response: { 200: RuntimeLog, ...errorResponses(400, 401, 404) },
      },
    },
    async (req) => {
      const { projectID, deploymentID } = req.params;
      return runtimeLog(kernel, principalOf(req).accountId, projectID, deploymentID, req.query.lines);
    },
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
