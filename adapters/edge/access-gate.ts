import { stringifySetCookie } from 'cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  SITE_ACCESS_SERVICE,
  type GatedProject,
  type SiteAccess,
  type SiteAccessService,
} from '../../core/access/site-access-service.js';
import type { AccessTokenCache } from '../../core/access/access-token-cache.js';
import { HoistError } from '../../core/errors.js';
import type { Kernel } from '../kernel.js';
import { codePage, GATE_PREFIX, gateMessagePage, signInPage } from './access-pages.js';
import { accessCookies, ACCESS_COOKIE, withoutAccessCookie } from './edge-cookies.js';
import { notFoundPage } from './pages.js';

/** How long the sign-in page shows a project as read (its name, whether it has a password, that it is active). */
const SHOWN_PROJECT_MS = 1000;
/** Projects remembered for the sign-in page at most (all forgotten at once past it). */
const SHOWN_PROJECTS_MAX = 10_000;

/** The access cookie: host-only (no Domain), so it goes to the one project host that set it. */
export { ACCESS_COOKIE } from './edge-cookies.js';
const FORM_MAX_BYTES = 8192;

/** The project a request resolved to, as the gate needs it. */
export interface GateTarget {
  projectId: string;
  visibility: string;
  /** What opens the project now (routing table): a valid access token's `jti` must be one of them. */
  accessProofs: ReadonlySet<string>;
}

/** The edge's gate in front of private projects. */
export interface AccessGate {
  /**
   * Answers `req` itself when it must: a sign-in request under GATE_PREFIX, or any request to a
   * private project without a valid access cookie (401 sign-in page). True when it answered.
   */
  stops(req: FastifyRequest, reply: FastifyReply, target: GateTarget): Promise<boolean>;
  /** Runs `pass` for an upgrade the gate lets through; answers any other with 401 and closes it. */
  upgrade(req: IncomingMessage, socket: Duplex, target: GateTarget, pass: () => void): void;
}

class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Creates the gate of `app` (the edge); mail it sends is awaited when the edge closes. Access cookies
 * are checked in memory (`cookies` verifies each token once; the routing table's proofs say whether
 * what opened it still holds), so a visitor's requests read no database.
 */
export function createAccessGate(kernel: Kernel, app: FastifyInstance, cookies: AccessTokenCache): AccessGate {
  const { config } = kernel;
  const service = kernel.get<SiteAccessService>(SITE_ACCESS_SERVICE);
  // Each request's own entity manager, given to the service: no request context (see SiteAccessService.on).
  const forRequest = () => service.on(kernel.orm.em.fork());
  // What the sign-in page shows of a project, read at most once a second per project: visitors without a cookie,
  // however many, cost the database one query a second for each private project they ask.
  const shown = new Map<string, { at: number; project: Promise<GatedProject | null> }>();
  const recent = (projectId: string): Promise<GatedProject | null> => {
    const now = Date.now();
    const hit = shown.get(projectId);
    if (hit && now - hit.at < SHOWN_PROJECT_MS) return hit.project;
    if (shown.size >= SHOWN_PROJECTS_MAX) shown.clear();
    const project = forRequest().project(projectId);
    shown.set(projectId, { at: now, project });
    project.catch(() => shown.delete(projectId));
    return project;
  };
  // Whether one of the request's access cookies (a planted one cannot shadow the real one) opens the project.
  const opens = async (target: GateTarget, req: IncomingMessage) => {
    for (const token of accessCookies(req.headers.cookie))
      if (await cookies.opens(target.projectId, target.accessProofs, token)) return true;
    return false;
  };

  // Mail goes out after the answer, so the answer cannot tell a granted address from another by
  // its timing; one project's deliveries run in the order they were asked for.
  const deliveries = new Map<string, Promise<void>>();
  const deliver = (projectId: string, work: () => Promise<void>) => {
    const run = (deliveries.get(projectId) ?? Promise.resolve())
      .then(work)
      .catch((err) => app.log.error({ err, projectId }, 'access code mail failed'));
    deliveries.set(projectId, run);
    void run.finally(() => deliveries.get(projectId) === run && deliveries.delete(projectId));
  };
  app.addHook('onClose', async () => {
    await Promise.all(deliveries.values());
  });

  const secure = (req: FastifyRequest) => config.appsScheme === 'https' || req.protocol === 'https';
  const originOf = (req: FastifyRequest) => `${secure(req) ? 'https' : 'http'}://${req.headers.host}`;

  const page = (reply: FastifyReply, status: number, html: string) =>
    reply
      .status(status)
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('x-robots-tag', 'noindex')
      .send(html);

  const signIn = (
    reply: FastifyReply,
    project: GatedProject,
    status: number,
    next: string,
    extra: { error?: string; email?: string; errorAt?: 'email' | 'password' } = {},
  ) => page(reply, status, signInPage({ project: project.name, next, hasPassword: project.hasPassword, ...extra }));

  const opened = (req: FastifyRequest, reply: FastifyReply, grant: SiteAccess, next: string) =>
    reply
      .header(
        'set-cookie',
        stringifySetCookie({
          name: ACCESS_COOKIE,
          value: grant.token,
          httpOnly: true,
          sameSite: 'lax',
          secure: secure(req),
          path: '/',
          expires: grant.expiresAt,
          maxAge: config.accessCookieTtlSeconds,
        }),
      )
      .header('cache-control', 'no-store')
      .redirect(next, 303);

  const handle = async (
    req: FastifyRequest,
    reply: FastifyReply,
    access: SiteAccessService,
    project: GatedProject,
    path: string,
  ) => {
    const query = new URLSearchParams(req.url.slice(req.url.indexOf('?') + 1 || req.url.length));
    if (req.method === 'GET' || req.method === 'HEAD') {
      const next = safeNext(query.get('next'));
      if (path === GATE_PREFIX) return signIn(reply, project, 200, next);
      if (path === `${GATE_PREFIX}link`) {
        // The mailed link only fills the code form in: a mail scanner fetching it uses up nothing.
        return page(
          reply,
          200,
          codePage({ project: project.name, next, email: query.get('email') ?? '', code: query.get('code') ?? '' }),
        );
      }
      throw new Refusal(404, 'Not found', 'There is no such sign-in page.');
    }
    if (req.method !== 'POST') throw new Refusal(405, 'Method not allowed', 'Sign-in forms are sent with POST.');
    checkOrigin(req);
    const form = await readForm(req);
    const next = safeNext(form.get('next'));
    const client = req.ip;
    try {
      switch (path) {
        case `${GATE_PREFIX}email`: {
          const email = form.get('email') ?? '';
          const origin = originOf(req);
          const { delivery } = await access.requestCode(
            project.id,
            email,
            client,
            (to, code) => `${origin}${GATE_PREFIX}link?${new URLSearchParams({ email: to, code, next })}`,
          );
          deliver(project.id, delivery);
          return page(reply, 200, codePage({ project: project.name, next, email: email.trim().toLowerCase() }));
        }
        case `${GATE_PREFIX}code`: {
          const email = form.get('email') ?? '';
          try {
            return opened(req, reply, await access.verifyCode(project.id, email, form.get('code') ?? '', client), next);
          } catch (err) {
            if (!(err instanceof HoistError) || err.code !== 'unauthorized') throw err;
            return page(reply, 401, codePage({ project: project.name, next, email, error: err.message }));
          }
        }
        case `${GATE_PREFIX}password`:
          try {
            return opened(
              req,
              reply,
              await access.verifyPassword(project.id, form.get('password') ?? '', client),
              next,
            );
          } catch (err) {
            if (!(err instanceof HoistError) || err.code !== 'unauthorized') throw err;
            return signIn(reply, project, 401, next, { error: err.message, errorAt: 'password' });
          }
        case `${GATE_PREFIX}sign-out`:
          return reply
            .header(
              'set-cookie',
              stringifySetCookie({
                name: ACCESS_COOKIE,
                value: '',
                httpOnly: true,
                sameSite: 'lax',
                secure: secure(req),
                path: '/',
                maxAge: 0,
              }),
            )
            .redirect(`${GATE_PREFIX}?next=${encodeURIComponent(next)}`, 303);
        default:
          throw new Refusal(404, 'Not found', 'There is no such sign-in form.');
      }
    } catch (err) {
      if (err instanceof HoistError && err.code === 'rate_limited') {
        reply.header('retry-after', String(err.details.retry_after));
        throw new Refusal(
          429,
          'Too many attempts',
          `Too many sign-in attempts from your address. Try again in ${err.details.retry_after} seconds.`,
        );
      }
      if (err instanceof HoistError && err.code === 'unavailable') {
        reply.header('retry-after', String(err.details.retry_after ?? 1));
        throw new Refusal(503, 'Busy', 'Many sign-ins are being checked right now. Try again in a moment.');
      }
      if (err instanceof HoistError && err.code === 'invalid_request')
        return signIn(reply, project, 400, next, { error: err.message, email: form.get('email') ?? '' });
      throw err;
    }
  };

  return {
    async stops(req, reply, target) {
      if (target.visibility !== 'private') return false;
      const path = (req.url.split('?')[0] ?? '/').replace(/^\/\.hoist\/access$/, GATE_PREFIX);
      if (!path.startsWith(GATE_PREFIX) && (await opens(target, req.raw))) {
        withoutAccessCookie(req.raw);
        return false;
      }
      const access = forRequest();
      const gate = path.startsWith(GATE_PREFIX);
      // The gate's own forms read it fresh; the sign-in page (every visitor without a cookie) through `recent`.
      const project = gate ? await access.project(target.projectId) : await recent(target.projectId);
      // No active project (its deletion began before this edge's routing table reloaded): closed, never open.
      if (!project) {
        reply
          .status(404)
          .type('text/html; charset=utf-8')
          .header('cache-control', 'no-store')
          .header('x-robots-tag', 'noindex')
          .send(notFoundPage());
        return true;
      }
      if (gate) {
        try {
          await handle(req, reply, access, project, path);
        } catch (err) {
          if (!(err instanceof Refusal)) throw err;
          page(reply, err.status, gateMessagePage(err.title, err.message));
        }
        return true;
      }
      signIn(reply, project, 401, req.method === 'GET' || req.method === 'HEAD' ? safeNext(req.url) : '/');
      return true;
    },

    upgrade(req, socket, target, pass) {
      if (target.visibility !== 'private') return pass();
      opens(target, req).then(
        (allowed) => {
          if (!allowed)
            return void socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
          withoutAccessCookie(req);
          pass();
        },
        () => socket.destroy(),
      );
    },
  };
}

/** Where to go after signing in: a path on this host, never another site nor a gate page. */
export function safeNext(value: string | null | undefined): string {
  if (!value || value.length > 2048 || !value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\'))
    return '/';
  if (/[\u0000-\u001f\u007f\\]/.test(value) || value.startsWith('/.hoist/')) return '/';
  return value;
}

/**
 * Refuses a form post that did not come from a page of this host (SameSite aside, the Origin check stops cross-site
 * posts).
 */
function checkOrigin(req: FastifyRequest): void {
  const from = req.headers.origin ?? req.headers.referer;
  let host: string | null = null;
  try {
    host = from && from !== 'null' ? new URL(from).host : null;
  } catch {
    // A malformed Origin or Referer counts as none.
  }
  if (!host || host !== req.headers.host?.toLowerCase())
    throw new Refusal(403, 'Form refused', 'This form must be sent from the sign-in page of this site.');
}

/**
 * The gate's own form body (application/x-www-form-urlencoded, at most 8 KiB); other bodies stream to apps unparsed.
 */
async function readForm(req: FastifyRequest): Promise<URLSearchParams> {
  const type = String(req.headers['content-type'] ?? '')
    .split(';')[0]
    .trim()
    .toLowerCase();
  if (type !== 'application/x-www-form-urlencoded')
    throw new Refusal(415, 'Form refused', 'Sign-in forms are sent as application/x-www-form-urlencoded.');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req.raw) {
    size += (chunk as Buffer).length;
    if (size > FORM_MAX_BYTES) throw new Refusal(413, 'Form refused', 'The form is too large.');
    chunks.push(chunk as Buffer);
  }
  const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
  // As the API does (adapters/http/refuse-nul.ts): U+0000 never reaches a query.
  for (const [name, value] of form) {
    if (name.includes('\u0000') || value.includes('\u0000'))
      throw new Refusal(400, 'Form refused', 'A form field holds the NUL character (U+0000), which no form needs.');
  }
  return form;
}
