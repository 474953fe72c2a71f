import type { FastifyInstance } from 'fastify';
import type { HoistConfig } from '../../config/schema.js';
import { startedDeployment } from '../../core/deployments/started-deployment.js';
import type { Operation, StartedBy } from '../../core/entities/operation.js';
import type { Project } from '../../core/entities/project.js';
import { IDEMPOTENCY_SERVICE } from '../../core/idempotency/idempotency-service.js';
import type { Kernel } from '../kernel.js';
import { bearer, principalOf, startedByOf } from './auth.js';
import { queuedSchema, sendQueued } from './queued-answer.js';
import { recordParams } from './record-schemas.js';
import { errorResponses } from './schemas.js';

/** What a record retry route is. */
export interface RetryRoute {
  /** e.g. `/projects/:projectID/builds/:buildID/retry`. */
  path: string;
  /** The record's path parameter, e.g. `buildID`. */
  param: string;
  tag: string;
  summary: string;
  description: string;
  /** The answer's action, e.g. `build_retry_queued`. */
  action: string;
  retry(
    accountId: string,
    projectId: string,
    id: string,
    startedBy: StartedBy,
  ): Promise<{ project: Project; operation: Operation }>;
  /** The answer's description, when not the retries' common one. */
  common?: string;
}

const COMMON =
  ' Answers 202 with the new parent operation; poll GET /api/v1/operations/{id} until it is terminal. ' +
  'Refused with 409 deployment_in_progress (details.operation_id) while another deployment of the project runs, and ' +
  "with 403 plan_restricted beyond the plan's deployments_per_day. " +
  'An `Idempotency-Key` header makes the call safe to repeat: the same key and request within 24 h return the first ' +
  'answer and start nothing; the same key with a different request → 422 idempotency_key_reused. ' +
  "Another account's project or record and a malformed id answer 404 like a missing one.";

/** Registers a POST route that starts a new deployment operation from a record (a build or a deployment). */
export function retryRoute(app: FastifyInstance, kernel: Kernel, r: RetryRoute): void {
  const config = kernel.config as HoistConfig;
  const idempotency = kernel.get(IDEMPOTENCY_SERVICE);
  app.post<{ Params: Record<string, string> }>(
    r.path,
    {
      schema: {
        tags: [r.tag],
        summary: r.summary,
        description: r.description + (r.common ?? COMMON),
        security: bearer,
        params: recordParams(r.param),
        headers: { type: 'object', properties: { 'idempotency-key': { type: 'string', maxLength: 255 } } },
        response: { 202: queuedSchema(r.action), ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (req, reply) => {
      const { accountId } = principalOf(req);
      const { projectID } = req.params;
      const id = req.params[r.param];
      const key = req.headers['idempotency-key'];
      const result = await idempotency.run(
        accountId,
        typeof key === 'string' ? key : undefined,
        { action: r.action, projectID, id },
        async () => {
          const { project, operation } = await r.retry(accountId, projectID, id, startedByOf(req));
          return startedDeployment(project, operation);
        },
      );
      return sendQueued(reply, config, r.action, { started: result.value, replayed: result.replayed });
    },
  );
}
