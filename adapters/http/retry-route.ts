import type { FastifyInstance } from 'fastify';
import type { HoistConfig } from '../../config/schema.js';
import type { Operation } from '../../core/entities/operation.js';
import type { Project } from '../../core/entities/project.js';
import { IDEMPOTENCY_SERVICE, requestHash, type IdempotencyService } from '../../core/idempotency/idempotency-service.js';
import { projectUrl } from '../../core/projects/project-url.js';
import type { Kernel } from '../kernel.js';
import { bearer, principalOf } from './auth.js';
import { recordParams, RetryQueued } from './record-schemas.js';
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
  retry(accountId: string, projectId: string, id: string): Promise<{ project: Project; operation: Operation }>;
}

const COMMON =
  ' Answers 202 with the new parent operation; poll GET /api/v1/operations/{id} until it is terminal. ' +
  'Refused with 409 deployment_in_progress (details.operation_id) while another deployment of the project runs, and with 403 plan_restricted beyond the plan\'s deployments_per_day. ' +
  'An `Idempotency-Key` header makes the call safe to repeat: the same key and request within 24 h return the first answer and start nothing; the same key with a different request → 422 idempotency_key_reused. ' +
  'Another account\'s project or record and a malformed id answer 404 like a missing one.';

/** Registers a POST route that starts a new deployment operation from a record (a build or a deployment). */
export function retryRoute(app: FastifyInstance, kernel: Kernel, r: RetryRoute): void {
  const config = kernel.config as HoistConfig;
  const idempotency = kernel.get<IdempotencyService>(IDEMPOTENCY_SERVICE);
  app.post<{ Params: Record<string, string> }>(
    r.path,
    {
      schema: {
        tags: [r.tag],
        summary: r.summary,
        description: r.description + COMMON,
        security: bearer,
        params: recordParams(r.param),
        headers: { type: 'object', properties: { 'idempotency-key': { type: 'string', maxLength: 255 } } },
        response: { 202: RetryQueued(r.action), ...errorResponses(401, 403, 404, 409, 422) },
      },
    },
    async (req, reply) => {
      const { accountId } = principalOf(req);
      const { projectID } = req.params;
      const id = req.params[r.param];
      const key = req.headers['idempotency-key'];
      const result = await idempotency.run(accountId, typeof key === 'string' ? key : undefined, requestHash({ action: r.action, projectID, id }), async () => {
        const { project, operation } = await r.retry(accountId, projectID, id);
        return {
          status: 202,
          body: {
            action: r.action,
            project: { id: project.id, name: project.name, slug: project.slug, url: projectUrl(config, project.slug) },
            operation: { id: operation.id, status: operation.status, progress: operation.progress },
            next_step: `Poll GET /api/v1/operations/${operation.id} every 2-10 s (with backoff) until its status is succeeded, failed or canceled; then open project.url.`,
          },
        };
      });
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      return reply.status(result.status).send(result.body);
    },
  );
}
