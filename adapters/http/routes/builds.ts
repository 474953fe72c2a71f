import type { FastifyPluginAsync } from 'fastify';
import { RECORDS_SERVICE, type RecordsService } from '../../../core/deployments/records-service.js';
import { OPERATION_EVENTS, parseLineId, type OperationEvents } from '../../../core/deployments/operation-events.js';
import { bearer, principalOf } from '../auth.js';
import { eventStreamsOf, lastEventId, wantsEventStream } from '../event-stream.js';
import { BuildRecord, pageOf, PageQuery, recordParams } from '../record-schemas.js';
import { retryRoute } from '../retry-route.js';
import { errorResponses } from '../schemas.js';
import type { RouteOptions } from './index.js';

/** Builds: a project's build records, their full logs, and build retries. */
const builds: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const records = kernel.get<RecordsService>(RECORDS_SERVICE);
  app.addHook('onRequest', app.authenticate);
  const events = kernel.get<OperationEvents>(OPERATION_EVENTS);
  const streams = eventStreamsOf(kernel);
  app.addHook('preClose', async () => streams.closeAll());

  app.get<{ Params: { projectID: string }; Querystring: { cursor?: string; limit: number } }>(
    '/projects/:projectID/builds',
    {
      schema: {
        tags: ['Builds'],
        summary: 'List the builds of a project',
        description:
          'Builds, newest first, cursor-paginated: pass next_cursor back unchanged as cursor until it is null. ' +
          'A project of another account answers 404 like a missing one.',
        security: bearer,
        params: recordParams(),
        querystring: PageQuery,
        response: { 200: pageOf('builds', BuildRecord), ...errorResponses(400, 401, 404) },
      },
    },
    async (req) => {
      const page = await records.builds(principalOf(req).accountId, req.params.projectID, req.query);
      return { builds: page.items, next_cursor: page.nextCursor };
    },
  );

  app.get<{ Params: { projectID: string; buildID: string } }>(
    '/projects/:projectID/builds/:buildID',
    {
      schema: {
        tags: ['Builds'],
        summary: 'Read a build',
        description:
          "Status, version, operation, artifact, log summary and error. Another account's " +
          'build and a malformed id answer 404 like a missing one.',
        security: bearer,
        params: recordParams('buildID'),
        response: { 200: BuildRecord, ...errorResponses(401, 404) },
      },
    },
    async (req) => records.build(principalOf(req).accountId, req.params.projectID, req.params.buildID),
  );

  app.get<{ Params: { projectID: string; buildID: string } }>(
    '/projects/:projectID/builds/:buildID/log',
    {
      schema: {
        tags: ['Builds'],
        summary: 'Read the full log of a build',
        description:
          'The whole stored build log as text/plain (capped at 5 MB, then marked ' +
          'truncated). It is stored when the build ends: 404 until then; 410 gone once removed ' +
          '(log_removed_at on the build: HOIST_BUILD_LOG_DAYS after the build, unless a retained release uses ' +
          'it). With `Accept: ' +
          'text/event-stream`, Server-Sent Events instead, at any time: `log` events (data: `{build_id, ' +
          'from, lines}`) with the lines written so far and then as they come, heartbeat comments, and ' +
          'the end of the stream once the build has ended. Event ids are line counts (across the ' +
          "build's operation): send the last as `Last-Event-ID` to resume. Too many open streams: " +
          '429 per account, 503 in all.',
        security: bearer,
        params: recordParams('buildID'),
        produces: ['text/plain'],
        response: {
          200: { description: 'The build log.', content: { 'text/plain': { schema: { type: 'string' } } } },
          ...errorResponses(400, 401, 404, 410, 429, 503),
        },
      },
    },
    async (req, reply) => {
      if (wantsEventStream(req)) {
        const { accountId } = principalOf(req);
        const { projectID, buildID } = req.params;
        const build = await records.build(accountId, projectID, buildID);
        const from = parseLineId(lastEventId(req));
        return streams.send(req, reply, accountId, (signal) =>
          events.buildLog(accountId, build.project_id, build.id, from, signal),
        );
      }
      const log = await records.buildLog(principalOf(req).accountId, req.params.projectID, req.params.buildID);
      return reply.type('text/plain; charset=utf-8').send(log);
    },
  );

  retryRoute(app, kernel, {
    path: '/projects/:projectID/builds/:buildID/retry',
    param: 'buildID',
    tag: 'Builds',
    summary: 'Retry a build',
    description:
      "Starts a NEW deployment operation for the build's version: Analyze and Build run " +
      "again with the project's current settings (fix them first if the build failed " +
      'because of them), then Deploy. ' +
      'The retried build record is left as it was; the new run makes a new build ' +
      'record. Any build can be retried (a failed one, or a good one to rebuild it) while its archive is ' +
      'kept: once removed (archive_removed_at on the version), 409 not_retryable with details.reason ' +
      'archive_removed. ' +
      'The answer has action build_retry_queued.',
    action: 'build_retry_queued',
    retry: (accountId, projectId, id, by) => records.retryBuild(accountId, projectId, id, by),
  });
};

export default builds;
