import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { AUTH_SERVICE, type AuthService } from '../../core/auth/auth-service.js';
import { inRequestScope } from '../db/request-scope.js';
import type { Kernel } from '../kernel.js';
import { healthRoutes, instrument } from '../observability/health-routes.js';
import { agentTools } from './agent-tools.js';
import { oauthRoutes } from './oauth.js';
import { authPlugin } from './auth.js';
import { errorBody, errorHandler } from './error-handler.js';
import { routes } from './routes/index.js';
import { ErrorBody } from './schemas.js';
import { refuseNul } from './refuse-nul.js';
import { limitRequests, refusedCounter } from './rate-limit.js';
import { redactUrl, requestLog } from './request-log.js';
import { clientErrorHandler, guardSlowClients, serverTimeouts, trustedHops } from './slow-clients.js';
import { lazySchemas } from './lazy-schemas.js';
import { requestId } from './request-id.js';

/** Builds the REST API (not listening): every route under /api/v1, with /api as an alias. */
export async function buildApi(kernel: Kernel): Promise<FastifyInstance> {
  const { config } = kernel;
  const app = Fastify({
    // Upload URLs carry their secret in the path: the request log shows it redacted.
    loggerInstance: kernel.log.child({}, { serializers: { req: requestLog } }) as FastifyBaseLogger,
    genReqId: requestId,
    trustProxy: trustedHops(config),
    // Slow clients: headers, keep-alive and whole-request timeouts; what Node refuses is answered with the error body.
    ...serverTimeouts(config),
    clientErrorHandler: clientErrorHandler(config, 'json'),
    // Path parameters as long as environment variable names, so an over-long one gets the spec's 400, not the router's
    // 414.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 512 },
    // The floating alias /api/... runs the same handlers as /api/v1/..., with no redirect.
    rewriteUrl: (req) => (req.url ?? '/').replace(/^\/api(?=\/|$|\?)(?!\/v1(?:\/|$|\?))/, '/api/v1'),
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', useDefaults: true, allErrors: false } },
    // A nullable field's serializer picks its branch with Ajv, which checked the format of every date and id it
    // wrote (our own, always well-formed): about 6% of the CPU of GET /operations/{id}.
    serializerOpts: { ajv: { validateFormats: false } },
    // Each route's schemas compile on its first request: the API answers sooner after a start.
    schemaController: lazySchemas(),
  });

  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    inRequestScope(kernel.orm.em, done);
  });
  // A body too slow for a route that is not reading it yet is answered here; one being read fails its reader (→
  // errorHandler).
  guardSlowClients(app, config, 'json', (req, res, err) => {
    if (res.headersSent) return;
    const body = {
      error: {
        code: err.code,
        message: err.message,
        request_id: String(res.getHeader('x-request-id') ?? ''),
        details: err.details,
      },
    };
    res
      .writeHead(408, { 'content-type': 'application/json; charset=utf-8', connection: 'close' })
      .end(JSON.stringify(body));
  });
  // One place for every route: no text with U+0000 reaches a handler or the database.
  app.addHook('preValidation', refuseNul);
  instrument(app, kernel, 'api');
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((req, reply) =>
    reply.status(404).send(errorBody(req, 'not_found', `No route ${req.method} ${redactUrl(req.url.split('?')[0])}`)),
  );
  app.addSchema(ErrorBody);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Hoist API',
        version: '1.0.0',
        description:
          'Upload a ZIP, get a live URL. Every path also answers under the floating alias ' +
          '/api/... with the same handlers. ' +
          'Errors use the body {error: {code, message, request_id, details}}; the request ' +
          'id is also in the X-Request-Id header. ' +
          'Any request may get 408 request_timeout (headers not complete within ' +
          'headersTimeoutMs of connecting, or a body slower than minBodyBytesPerSecond ' +
          'averaged over bodyRateWindowMs; the connection closes) and, on a new connection, ' +
          '429 rate_limited (more than maxConnectionsPerAddress open from one address). ' +
          (config.apiRequestsPerMinute
            ? `Each account may send ${config.apiRequestsPerMinute} requests a minute to one API process ` +
              '(apiRequestsPerMinute), and each client address as many without a good token: every answer carries ' +
              'X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (seconds), and one past the limit ' +
              'gets 429 rate_limited with Retry-After and details {limit, window_seconds, retry_after}.'
            : 'Requests are not limited per account (apiRequestsPerMinute is 0).'),
      },
      servers: [{ url: '/' }],
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
    },
    refResolver: { buildLocalReference: (json, _base, _frag, i) => String(json.$id ?? `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(healthRoutes, { kernel, role: 'api' });
  await limitRequests(app, config);
  await app.register(authPlugin, {
    auth: kernel.get<AuthService>(AUTH_SERVICE),
    countRefused: refusedCounter(app, config),
  });
  for (const route of routes) await app.register(route, { prefix: '/api/v1', kernel });
  await app.register(agentTools, { prefix: '/agent/v1', kernel });
  await app.register(oauthRoutes, { kernel });
  return app;
}
