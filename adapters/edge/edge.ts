import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { createServer } from 'node:http';
import type { Duplex } from 'node:stream';
import { AccessTokenCache } from '../../core/access/access-token-cache.js';
import { HOST_ROUTES } from '../../core/deployments/host-routes.js';
import type { RoutingTable } from '../../core/deployments/routing-table.js';
import { TOKEN_SERVICE } from '../../core/ports/token-service.js';
import type { Kernel } from '../kernel.js';
import { hostHeaders } from './host-headers.js';
import { notFoundPage } from './pages.js';
import { createAccessGate } from './access-gate.js';
import { createFastPath, releaseHeaders, staticRelease } from './fast-path.js';
import { createReleaseProxy } from './proxy.js';
import { serveStatic } from './static-files.js';
import { answerRaw } from './upgrade.js';
import { createUsageMeter, servedFor } from './usage-meter.js';
import { instrument } from '../observability/health-routes.js';
import { clientErrorHandler, guardSlowClients, serverTimeouts, trustedHops } from '../http/slow-clients.js';

/**
 * Builds the edge (not listening): serves each project's live release on `<slug>.<appsDomain>` and
 * its active customer domains (the in-memory routing table says which release a Host gets; it is
 * loaded here and kept current by the change feed), and nothing else (its health and metrics are on
 * the admin listener, see startRoles). Requests without a body to public projects, and to private ones
 * with a known access cookie, are answered on node:http before fastify (fast-path.ts): static files,
 * and Node.js releases proxied through undici; everything else goes through fastify. Each request
 * takes the live release once and is answered from it alone, so a switch of release never mixes two
 * releases in one response. Every answer is counted for its project's usage (usage-meter.ts), in memory.
 */
export async function buildEdge(kernel: Kernel): Promise<FastifyInstance> {
  const { config } = kernel;
  const routes = kernel.get(HOST_ROUTES);
  await (routes as Partial<RoutingTable>).start?.();
  const cookies = new AccessTokenCache(kernel.get(TOKEN_SERVICE));
  const proxy = createReleaseProxy({
    trustProxy: config.trustProxy,
    appsScheme: config.appsScheme as 'http' | 'https',
    appsDomain: config.appsDomain,
  });
  const fast = createFastPath(kernel, routes, cookies, proxy);
  const meter = createUsageMeter(kernel);
  const app = Fastify({
    loggerInstance: kernel.log.child({ role: 'edge' }) as FastifyBaseLogger,
    trustProxy: trustedHops(config),
    // Slow clients: headers, keep-alive and whole-request timeouts, a minimum body rate and a cap per address.
    ...serverTimeouts(config),
    clientErrorHandler: clientErrorHandler(config, 'text'),
    // The hot path answers before fastify sees the request; the server keeps fastify's timeouts.
    serverFactory: (handler, opts) => {
      const server = createServer(opts.http ?? {}, (req, res) => {
        meter.watch(res);
        return fast(req, res) || handler(req, res);
      });
      server.keepAliveTimeout = Number(opts.keepAliveTimeout);
      server.requestTimeout = Number(opts.requestTimeout);
      return server;
    },
  });
  app.addHook('onClose', async () => {
    await meter.stop();
    await (routes as Partial<RoutingTable>).stop?.();
  });
  guardSlowClients(app, config, 'text', (_req, res, err) => {
    if (!res.headersSent)
      res
        .writeHead(408, {
          'content-type': 'text/plain; charset=utf-8',
          connection: 'close',
          'cache-control': 'no-store',
        })
        .end(`${err.message}\n`);
  });

  instrument(app, kernel, 'edge');
  // Two Host headers name two sites: which one a cache or a proxy in front took is anyone's guess (RFC 9112 §3.2: 400).
  app.addHook('onRequest', async (req, reply) => {
    if (hostHeaders(req.raw.rawHeaders) > 1)
      return reply
        .status(400)
        .type('text/plain; charset=utf-8')
        .header('connection', 'close')
        .send('Bad request: more than one Host header\n');
  });
  const gate = createAccessGate(kernel, app, cookies);
  const serve = async (req: FastifyRequest, reply: FastifyReply) => {
    // The public port serves projects only: health and metrics live on the admin listener
    // (startRoles), so a Host that names no project gets the 404 page whatever its path.
    const release = routes.lookup(req.headers.host);
    if (!release)
      return reply
        .status(404)
        .type('text/html; charset=utf-8')
        .header('cache-control', 'no-store')
        .send(notFoundPage());
    servedFor(reply.raw, release.projectId);
    if (await gate.stops(req, reply, release)) return reply;
    const headers = releaseHeaders(release);
    if (release.target.kind === 'http') {
      reply.hijack();
      proxy.web(req.raw, reply.raw, release.target, headers as Record<string, string>);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return reply.status(405).headers(headers).header('allow', 'GET, HEAD').send();
    reply.hijack();
    await serveStatic(req.raw, reply.raw, staticRelease(release, release.target.root));
  };
  // Request bodies stream through to Node.js releases untouched: nothing is parsed here.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null));
  app.all('/*', serve);
  // Upgraded (WebSocket) connections are not closed by the server on shutdown: end them ourselves.
  const upgraded = new Set<Duplex>();
  app.addHook('preClose', async () => {
    for (const s of upgraded) s.destroy();
  });
  app.server.on('upgrade', (req, socket, head) => {
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    // node:http no longer listens for this socket's errors: a client's reset (before the gate lets it through, say)
    // would be thrown.
    socket.on('error', () => socket.destroy());
    if (hostHeaders(req.rawHeaders) > 1)
      return answerRaw(socket, '400 Bad Request', 'Bad request: more than one Host header\n');
    const release = routes.lookup(req.headers.host);
    const target = release?.target;
    if (release && target?.kind === 'http')
      gate.upgrade(req, socket, release, () => proxy.ws(req, socket, head, target, releaseHeaders(release)));
    else socket.destroy();
  });
  return app;
}
