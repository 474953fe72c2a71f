import type { StartedBy } from '../../core/entities/operation.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { AuthService } from '../../core/auth/auth-service.js';
import type { Principal } from '../../core/auth/principal.js';
import { unauthorized } from '../../core/errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
  interface FastifyInstance {
    /** onRequest hook for protected routes: verifies the bearer token and sets `request.principal`. */
    authenticate(req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void;
  }
}

/** The bearer token of a request, or null when the header is missing or not a Bearer one. */
export function bearerToken(req: FastifyRequest): string | null {
  const h = req.headers.authorization;
  const m = typeof h === 'string' ? /^Bearer ([A-Za-z0-9._~+/=-]+)$/.exec(h.trim()) : null;
  return m ? m[1] : null;
}

/** Who sent an authenticated request, as a release's provenance records it. */
export function startedByOf(req: FastifyRequest): StartedBy {
  const { userId, email } = principalOf(req);
  return { user_id: userId, email };
}

/** The principal of an authenticated request (routes behind `authenticate` only). */
export function principalOf(req: FastifyRequest): Principal {
  if (!req.principal) throw unauthorized();
  return req.principal;
}

/** The security requirement protected routes put in their schema (shown in the OpenAPI document). */
export const bearer = [{ bearerAuth: [] }];

/** What `authPlugin` needs. */
export interface AuthPluginOptions {
  auth: AuthService;
  /**
   * Counts a request refused for its token against its client address, throwing the limit's own error past it (the
   * request limit, which a refused request never reaches, as it runs after authentication names the account).
   */
  countRefused?: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}

export const authPlugin = fp(async (app: FastifyInstance, opts: AuthPluginOptions) => {
  app.decorateRequest('principal', undefined);
  const { auth, countRefused } = opts;
  // A callback hook: a token verified before is answered without a promise.
  app.decorate('authenticate', (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    const refuse = (err: Error) => {
      if (!countRefused) return done(err);
      countRefused(req, reply).then(() => done(err), done);
    };
    const token = bearerToken(req);
    if (!token) return refuse(unauthorized('Missing or malformed Authorization header; expected "Bearer <token>"'));
    const known = auth.known(token);
    if (known) {
      req.principal = known;
      return done();
    }
    auth.authenticate(token).then((principal) => {
      req.principal = principal;
      done();
    }, refuse);
  });
});
