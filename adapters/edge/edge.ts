import compress from '@fastify/compress';
import fastifyStatic from '@fastify/static';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { readFile, stat } from 'node:fs/promises';
import type { Duplex } from 'node:stream';
import { extname, join, posix, relative } from 'node:path';
import { findLiveRelease } from '../../core/deployments/live-release.js';
import type { Kernel } from '../kernel.js';
import { hostHeaders, projectSlugOfHost } from './host-slug.js';
import { notFoundPage } from './pages.js';
import { createAccessGate } from './access-gate.js';
import { createReleaseProxy } from './proxy.js';
import { instrument } from '../observability/health-routes.js';
import { clientErrorHandler, guardSlowClients, serverTimeouts } from '../http/slow-clients.js';

/**
 * Builds the edge (not listening): serves each project's live release on `<slug>.<appsDomain>` and its active customer domains,
 * and nothing else (its health and metrics are on the admin listener, see startRoles).
 * Each request resolves the live release once and is answered from it alone, so a switch of
 * release never mixes two releases in one response.
 */
export async function buildEdge(kernel: Kernel): Promise<FastifyInstance> {
  const { config } = kernel;
  const app = Fastify({
    loggerInstance: kernel.log.child({ role: 'edge' }) as FastifyBaseLogger,
    trustProxy: config.trustProxy,
    // Slow clients: headers, keep-alive and whole-request timeouts, a minimum body rate and a cap per address.
    ...serverTimeouts(config),
    clientErrorHandler: clientErrorHandler(config, 'text'),
  });
  guardSlowClients(app, config, 'text', (_req, res, err) => {
    if (!res.headersSent) res.writeHead(408, { 'content-type': 'text/plain; charset=utf-8', connection: 'close', 'cache-control': 'no-store' }).end(`${err.message}\n`);
  });
  await app.register(compress, { global: true, threshold: 1024, encodings: ['br', 'gzip'] });
  // ETag, If-None-Match and Cache-Control are ours (serveStatic); send keeps Last-Modified, If-Modified-Since and ranges.
  await app.register(fastifyStatic, { serve: false, root: config.dataDir, etag: false, lastModified: true, cacheControl: false, dotfiles: 'allow' });

  instrument(app, kernel, 'edge');
  // Two Host headers name two sites: which one a cache or a proxy in front took is anyone's guess (RFC 9112 §3.2: 400).
  app.addHook('onRequest', async (req, reply) => {
    if (hostHeaders(req.raw.rawHeaders) > 1) return reply.status(400).type('text/plain; charset=utf-8').header('connection', 'close').send('Bad request: more than one Host header\n');
  });
  const proxy = createReleaseProxy({ trustProxy: config.trustProxy, appsScheme: config.appsScheme as 'http' | 'https' });
  const gate = createAccessGate(kernel, app);
  const serve = async (req: FastifyRequest, reply: FastifyReply) => {
    const em = kernel.orm.em.fork();
    // The public port serves projects only: health and metrics live on the admin listener
    // (startRoles), so a Host that names no project gets the 404 page whatever its path.
    const slug = await projectSlugOfHost(em, req.headers.host, config.appsDomain);
    const release = slug ? await findLiveRelease(em, slug) : null;
    if (!release) return notFound(reply, null);
    if (await gate.stops(req, reply, release)) return reply;
    if (release.visibility !== 'public') reply.header('x-robots-tag', 'noindex');
    reply.header('x-hoist-release', release.deploymentId);
    if (release.target.kind === 'http') {
      reply.hijack();
      proxy.web(req.raw, reply.raw, release.target.url, reply.getHeaders() as Record<string, string>);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply.status(405).header('allow', 'GET, HEAD').send();
    return serveStatic(req, reply, release.deploymentId, release.target.root);
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
    if (hostHeaders(req.rawHeaders) > 1) {
      const body = 'Bad request: more than one Host header\n';
      socket.end(`HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      return;
    }
    const em = kernel.orm.em.fork();
    const found = projectSlugOfHost(em, req.headers.host, config.appsDomain).then((slug) => (slug ? findLiveRelease(em, slug) : null));
    found.then(
      (release) => {
        const target = release?.target;
        if (release && target?.kind === 'http') gate.upgrade(req, socket, release, () => proxy.ws(req, socket, head, target.url));
        else socket.destroy();
      },
      () => socket.destroy(),
    );
  });
  return app;
}

/**
 * Answers from one immutable release directory: `/dir/` → `dir/index.html` (`/dir` redirects to
 * `/dir/`), `/page` → `page.html` when there is no such folder, anything else → the site's 404.html
 * (or ours) with status 404. Dotfiles are not served, except under `/.well-known/`. The ETag names
 * the release, so a file of the same size in the next release never matches a cached copy.
 */
async function serveStatic(req: FastifyRequest, reply: FastifyReply, release: string, root: string) {
  const pathname = req.url.split('?')[0] ?? '/';
  let path: string;
  try {
    path = decodeURIComponent(pathname);
  } catch {
    return reply.status(400).send('Bad path');
  }
  if (path.includes('\0')) return reply.status(400).send('Bad path');
  // Normalizing an absolute path drops every `..` at the top, so rel never climbs out of root.
  const rel = posix.normalize(`/${path}`).slice(1);
  if (rel.split('/').some((s, i) => s.startsWith('.') && !(i === 0 && s === '.well-known'))) return notFound(reply, root);

  let file = join(root, rel);
  let found = await statOf(file);
  if (found?.isDirectory()) {
    if (!pathname.endsWith('/')) {
      const query = req.url.slice(pathname.length);
      return reply.redirect(`/${rel.split('/').map(encodeURIComponent).join('/')}/${query}`, 301);
    }
    file = join(file, 'index.html');
    found = await statOf(file);
  } else if (!found && rel && !pathname.endsWith('/') && !extname(rel)) {
    file = `${file}.html`;
    found = await statOf(file);
  }
  if (!found?.isFile()) return notFound(reply, root);

  const etag = `W/"${release}-${found.size.toString(16)}"`;
  reply.header('etag', etag).header('cache-control', 'public, max-age=0, must-revalidate');
  if (matches(req.headers['if-none-match'], etag)) return reply.status(304).send();
  return reply.sendFile(relative(root, file), root);
}

/** A 404 with the site's own 404.html when the release has one, else the edge's page. */
async function notFound(reply: FastifyReply, root: string | null) {
  // Read, not sendFile: a 404 page must not answer conditional or range requests.
  const page = root ? await readFile(join(root, '404.html')).catch(() => null) : null;
  return reply.status(404).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(page ?? notFoundPage());
}

/** Whether an If-None-Match header names this ETag (weak comparison) or is `*`. */
function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  const bare = etag.replace(/^W\//, '');
  return header.split(',').some((t) => {
    const tag = t.trim();
    return tag === '*' || tag.replace(/^W\//, '') === bare;
  });
}

const statOf = (path: string) => stat(path).catch(() => null);
