import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyPluginAsync,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { timingSafeEqual } from 'node:crypto';
import { errorBody } from '../http/error-handler.js';
import { ErrorBody, errorResponses } from '../http/schemas.js';
import type { Kernel } from '../kernel.js';
import { metricsOf } from './metrics.js';
import { requestId } from '../http/request-id.js';

/** The health, readiness and metrics handlers of one role, for routes or the edge's own dispatch. */
export function healthHandlers(kernel: Kernel, role: string) {
  const { registry } = metricsOf(kernel);
  const token = kernel.config.metricsToken ? Buffer.from(`Bearer ${kernel.config.metricsToken}`) : null;
  /** Whether `req` may read the figures: no metricsToken is set, or it carries `Authorization: Bearer <token>`. */
  const authorized = (req: FastifyRequest) => {
    if (!token) return true;
    const given = Buffer.from(req.headers.authorization ?? '');
    return given.length === token.length && timingSafeEqual(given, token);
  };
  return {
    healthz: async (_req: FastifyRequest, reply: FastifyReply) =>
      reply.header('cache-control', 'no-store').send({ status: 'ok', role }),
    /**
     * 200 or 503 for anyone (a load balancer's probe carries no token), with each check `ok` or `down`; why one is
     * down names hosts, ports and paths (`connect ECONNREFUSED 127.0.0.1:5432`), so only a caller with the metrics
     * token gets the reasons, and nobody when none is set.
     */
    readyz: async (req: FastifyRequest, reply: FastifyReply) => {
      const { ok, checks } = await kernel.ready();
      const shown =
        token && authorized(req)
          ? checks
          : Object.fromEntries(Object.entries(checks).map(([id, r]) => [id, r === 'ok' ? 'ok' : 'down']));
      return reply
        .status(ok ? 200 : 503)
        .header('cache-control', 'no-store')
        .send({ status: ok ? 'ready' : 'not_ready', role, checks: shown });
    },
    metrics: async (req: FastifyRequest, reply: FastifyReply) => {
      if (!authorized(req)) {
        return reply
          .status(401)
          .header('www-authenticate', 'Bearer')
          .send(errorBody(req, 'unauthorized', 'The metrics token is required'));
      }
      return reply
        .header('cache-control', 'no-store')
        .type(registry.contentType)
        .send(await registry.metrics());
    },
  };
}

const Health = {
  type: 'object',
  required: ['status', 'role'],
  properties: { status: { type: 'string', enum: ['ok'] }, role: { type: 'string' } },
};
const Ready = {
  type: 'object',
  required: ['status', 'role', 'checks'],
  properties: {
    status: { type: 'string', enum: ['ready', 'not_ready'] },
    role: { type: 'string' },
    checks: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: '`database` and each plugin id with a backend: `ok`, or why it is not.',
    },
  },
};

/** `GET /healthz` (alive), `GET /readyz` (database, queue and storage reachable) and `GET /metrics` (Prometheus). */
export const healthRoutes: FastifyPluginAsync<{ kernel: Kernel; role: string }> = async (app, { kernel, role }) => {
  const h = healthHandlers(kernel, role);
  const tags = ['Health'];
  app.get(
    '/healthz',
    {
      schema: {
        tags,
        summary: 'Liveness: the process answers',
        description: 'Never touches a backend: a 200 means the process serves requests.',
        response: { 200: Health, ...errorResponses(500) },
      },
    },
    h.healthz,
  );
  app.get(
    '/readyz',
    {
      schema: {
        tags,
        summary: 'Readiness: the database and every backend (queue, storage) answer',
        description:
          '200 when every check is `ok`, else 503 with the failing checks `down`; why one is down (it names hosts, ' +
          'ports and paths) only with `Authorization: Bearer <token>` when `metricsToken` ' +
          '(HOIST_METRICS_TOKEN) is set.',
        response: { 200: Ready, 503: Ready },
      },
    },
    h.readyz,
  );
  app.get(
    '/metrics',
    {
      schema: {
        tags,
        summary: 'Prometheus metrics',
        description:
          'Text exposition format: HTTP request counts and latencies by role and route, ' +
          'operations by kind and status, stage durations, ' +
          'queue depth, live releases, and process figures. When `metricsToken` ' +
          '(HOIST_METRICS_TOKEN) is set, it needs `Authorization: Bearer <token>` (else ' +
          '401).',
        produces: ['text/plain'],
        response: {
          200: { type: 'string', description: 'Prometheus text exposition format 0.0.4.' },
          ...errorResponses(401),
        },
      },
    },
    h.metrics,
  );
};

/** Records every answered request of `app` in the kernel's metrics, labelled by `role` and route pattern. */
export function instrument(app: FastifyInstance, kernel: Kernel, role: string): void {
  const { tally } = metricsOf(kernel);
  app.addHook('onResponse', (req, reply, done) => {
    tally.count(role, req.method, req.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}

/** A server (not listening) with only the health routes, for a role that serves no HTTP of its own (the worker). */
export async function buildHealthServer(kernel: Kernel, role: string): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: kernel.log.child({ role }) as FastifyBaseLogger,
    genReqId: requestId,
  });
  app.addSchema(ErrorBody);
  await app.register(healthRoutes, { kernel, role });
  return app;
}
