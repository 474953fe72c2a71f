import type { FastifyPluginAsync } from 'fastify';
import { DEPLOYMENT_SERVICE, type DeploymentService } from '../../../core/deployments/deployment-service.js';
import { OPERATION_VIEWS, type OperationViews } from '../../../core/deployments/operation-views.js';
import { describeTransitions } from '../../../core/operations/state-machine.js';
import { OPERATION_EVENTS, parseEventId, type OperationEvents } from '../../../core/deployments/operation-events.js';
import { bearer, principalOf } from '../auth.js';
import { EVENT_STREAM_DOC, eventStreamsOf, lastEventId, wantsEventStream } from '../event-stream.js';
import { errorResponses, Timestamp, Uuid } from '../schemas.js';
import { sendOnce } from '../send-once.js';
import type { RouteOptions } from './index.js';

const nullable = (s: object) => ({ anyOf: [s, { type: 'null' }] });
const StageErr = nullable({ type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } } });
const Stage = {
  type: 'object',
  properties: {
    status: {
      type: 'string',
      enum: ['queued', 'running', 'succeeded', 'failed', 'canceled'],
      description: "The spec's five statuses. A stage done without running is succeeded with skipped true.",
    },
    skipped: {
      type: 'boolean',
      description:
        'true: the stage did not run and is not needed (Build with skip_build; Analyze ' +
        'and Build of a redeploy, which ships an existing build).',
    },
    skip_reason: nullable({ type: 'string', description: 'Why the stage was skipped; null when it was not.' }),
    progress: { type: 'integer' },
    started_at: nullable(Timestamp),
    finished_at: nullable(Timestamp),
    heartbeat_at: nullable(Timestamp),
    error: StageErr,
    result: {
      type: 'object',
      additionalProperties: true,
      description: 'Analyze only: what was detected and why (reasons).',
    },
  },
};

export const OperationSchema = {
  type: 'object',
  properties: {
    id: Uuid,
    kind: { type: 'string', description: 'deploy or delete_project' },
    status: { type: 'string', enum: ['queued', 'running', 'succeeded', 'failed', 'canceled'] },
    progress: {
      type: 'integer',
      minimum: 0,
      maximum: 100,
      description: 'Never decreases; 100 only on success. A fresh deployment reports 5.',
    },
    project_id: nullable(Uuid),
    version_id: nullable(Uuid),
    attempt: { type: 'integer' },
    current_stage: nullable({ type: 'string' }),
    stages: {
      type: 'object',
      description: 'Child state: analyze, build and deploy.',
      properties: { analyze: Stage, build: Stage, deploy: Stage },
    },
    build_log: nullable({
      type: 'object',
      description: 'Build-log context: the last lines, warning and error counts, and where the full log is.',
      properties: {
        build_id: Uuid,
        last_lines: { type: 'array', items: { type: 'string' } },
        warnings: { type: 'integer' },
        errors: { type: 'integer' },
        bytes: { type: 'integer' },
        full_log: { type: 'string' },
      },
    }),
    queue: nullable({
      type: 'object',
      description:
        'Queue information for the current stage. `held`: the account already runs its share of the workers ' +
        '(HOIST_RESERVED_WORKER_SLOTS), and the stage is queued when one of its other deployments ends; `reason` ' +
        'says so.',
      properties: {
        stage: { type: 'string' },
        state: { type: 'string', enum: ['waiting', 'running', 'gone', 'held'] },
        jobs_ahead: { type: 'integer' },
        position: { type: 'integer' },
        workers: nullable({ type: 'integer', description: 'Live worker slots; null when the queue did not answer.' }),
        held_since: { type: 'string', format: 'date-time', description: 'Held: since when.' },
        reason: { type: 'string', description: 'Held: why, and until when.' },
      },
    }),
    maybe_stuck: {
      type: 'boolean',
      description: 'The running stage has sent no heartbeat within the configured time.',
    },
    next_step: {
      type: 'object',
      description: 'The recommended next step; consult it before cancel or retry.',
      properties: {
        action: { type: 'string', enum: ['poll', 'retry', 'cancel', 'fix_input', 'none'] },
        message: { type: 'string' },
      },
    },
    result: nullable({
      type: 'object',
      properties: {
        url: nullable({ type: 'string' }),
        deployment_id: nullable(Uuid),
        build_id: nullable(Uuid),
        live: { type: 'boolean' },
      },
    }),
    error: StageErr,
    created_at: Timestamp,
    updated_at: Timestamp,
    finished_at: nullable(Timestamp),
  },
} as const;

const Params = {
  type: 'object',
  required: ['operationID'],
  properties: { operationID: { type: 'string', format: 'uuid' } },
};

/** Operations: poll, cancel, retry. */
const operations: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const views = kernel.get<OperationViews>(OPERATION_VIEWS);
  const deployments = kernel.get<DeploymentService>(DEPLOYMENT_SERVICE);
  app.addHook('onRequest', app.authenticate);
  // A malformed id is answered like a missing one.
  app.setErrorHandler((err, req, reply) => {
    if ((err as { validationContext?: string }).validationContext === 'params') return reply.callNotFound();
    throw err;
  });
  const transitions = describeTransitions();
  const events = kernel.get<OperationEvents>(OPERATION_EVENTS);
  const streams = eventStreamsOf(kernel);
  app.addHook('preClose', async () => streams.closeAll());

  app.get<{ Params: { operationID: string } }>(
    '/operations/:operationID',
    {
      schema: {
        tags: ['Operations'],
        summary: 'Poll a parent operation: progress, child state, build-log context, queue information, guidance',
        description:
          `Poll with bounded backoff (2-10 s) until status is succeeded, failed or ` +
          `canceled, or stream it.\n\n${EVENT_STREAM_DOC}\n\n${transitions}`,
        security: bearer,
        params: Params,
        response: { 200: OperationSchema, ...errorResponses(400, 401, 404, 429, 503) },
      },
    },
    async (req, reply) => {
      const { accountId } = principalOf(req);
      const op = await views.get(accountId, req.params.operationID);
      if (!wantsEventStream(req)) return sendOnce(reply, op);
      const from = parseEventId(lastEventId(req));
      return streams.send(req, reply, accountId, (signal) => events.operation(accountId, op.id, from, signal));
    },
  );

  app.post<{ Params: { operationID: string } }>(
    '/operations/:operationID/cancel',
    {
      schema: {
        tags: ['Operations'],
        summary: 'Cancel queued or running work',
        description:
          `queued or running → canceled: the running stage's process is stopped and a ` +
          `half-made release never goes live (the previous one keeps serving). Otherwise ` +
          `409 not_cancelable.\n\n${transitions}`,
        security: bearer,
        params: Params,
        response: { 202: OperationSchema, ...errorResponses(401, 404, 409) },
      },
    },
    async (req, reply) => {
      const { accountId } = principalOf(req);
      const op = await deployments.cancel(accountId, req.params.operationID);
      return reply.status(202).send(await views.view(op));
    },
  );

  app.post<{ Params: { operationID: string } }>(
    '/operations/:operationID/retry',
    {
      schema: {
        tags: ['Operations'],
        summary: 'Retry a failed or canceled deployment',
        description:
          `failed or canceled → running (a new attempt) that resumes from the stage that ` +
          `did not finish, reusing finished stages' outputs. Otherwise 409 not_retryable (details.reason ` +
          `archive_removed or artifact_removed when that stage's input was removed, HOIST_DEPLOYMENT_FILE_DAYS on); ` +
          `409 deployment_in_progress while another deployment of the project ` +
          `runs.\n\n${transitions}`,
        security: bearer,
        params: Params,
        response: { 202: OperationSchema, ...errorResponses(401, 404, 409) },
      },
    },
    async (req, reply) => {
      const { accountId } = principalOf(req);
      const op = await deployments.retry(accountId, req.params.operationID);
      return reply.status(202).send(await views.view(op));
    },
  );
};

export default operations;
