import formbody from '@fastify/formbody';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { registerClient } from '../../core/auth/oauth-clients.js';
import { OAuthError } from '../../core/auth/oauth-error.js';
import {
  OAUTH_SERVICE,
  UntrustedRedirect,
  type AuthorizationRequest,
  type AuthorizationTarget,
  type OAuthService,
} from '../../core/auth/oauth-service.js';
import { HoistError } from '../../core/errors.js';
import { CLOCK, type Clock } from '../../core/ports/clock.js';
import type { Kernel } from '../kernel.js';
import { openToBrowsers } from './cors.js';
import { errorHandler, statusOf } from './error-handler.js';
import { consentPage, destination, PAGE_HEADERS, refusedPage } from './oauth-page.js';
import { publicBase } from './public-base.js';

/** Where the MCP server's protected-resource metadata is (RFC 9728), as its 401 answers point to it. */
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource/agent/v1/mcp';

type Fields = Record<string, unknown>;
const hide = { schema: { hide: true } };
const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };
/** The OAuth endpoints a page of another origin may call (not the consent page). */
const BROWSER_OAUTH = ['/oauth/register', '/oauth/token', '/oauth/revoke'];

/** The form's or query's fields that are strings (checked: none is given twice). */
const strings = (v: unknown): Record<string, string> =>
  Object.fromEntries(
    Object.entries((v ?? {}) as Fields).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );

/**
 * OAuth 2.1 for the agent-tool interface, so that an MCP client connects with its user's consent alone: metadata
 * (RFC 8414, RFC 9728), dynamic client registration (RFC 7591), the consent page, the token endpoint (authorization
 * code with PKCE S256, refresh tokens rotated) and revocation (RFC 7009). OAuth's own error bodies, not Hoist's; kept
 * out of the REST OpenAPI document (README: Agent tools).
 */
export const oauthRoutes: FastifyPluginAsync<{ kernel: Kernel }> = async (app, { kernel }) => {
  const oauth = kernel.get<OAuthService>(OAUTH_SERVICE);
  const clock = kernel.get<Clock>(CLOCK);
  const base = (req: FastifyRequest) => publicBase(kernel.config, req);
  await app.register(formbody, { bodyLimit: 16 * 1024 });
  // Browser-based MCP clients discover, register, get and revoke tokens across origins; the consent page is a
  // page of Hoist's own, reached by navigation.
  await openToBrowsers(app, (path) => path.startsWith('/.well-known/oauth-') || BROWSER_OAUTH.includes(path));
  app.setErrorHandler((err, req, reply) => {
    if (!(err instanceof OAuthError)) return errorHandler(err as Error, req, reply);
    return reply.status(err.status).headers(NO_STORE).send({ error: err.error, error_description: err.description });
  });

  const resource = async (req: FastifyRequest) => ({
    resource: `${base(req)}/agent/v1/mcp`,
    authorization_servers: [base(req)],
    bearer_methods_supported: ['header'],
    resource_name: 'Hoist agent tools',
  });
  app.get('/.well-known/oauth-protected-resource', hide, resource);
  app.get(RESOURCE_METADATA_PATH, hide, resource);
  app.get('/.well-known/oauth-authorization-server', hide, async (req) => {
    const issuer = base(req);
    return {
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      registration_endpoint: `${issuer}/oauth/register`,
      revocation_endpoint: `${issuer}/oauth/revoke`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
    };
  });

  app.post('/oauth/register', hide, async (req, reply) =>
    reply.status(201).headers(NO_STORE).send(registerClient(req.body, clock.now())),
  );

  /** The client's redirect URI with `params`, the state and the issuer (RFC 9207). */
  const backTo = (req: FastifyRequest, to: AuthorizationTarget, params: Record<string, string>) => {
    const url = new URL(to.redirectUri);
    for (const [k, v] of Object.entries({ ...params, ...(to.state === null ? {} : { state: to.state }) }))
      url.searchParams.set(k, v);
    url.searchParams.set('iss', base(req));
    return url.href;
  };
  /** Sends the user back to the client: only after they decided on the consent page. */
  const back = (req: FastifyRequest, reply: FastifyReply, to: AuthorizationTarget, params: Record<string, string>) =>
    reply
      .status(303)
      .headers(NO_STORE)
      .redirect(backTo(req, to, params), 303);
  const page = (reply: FastifyReply, status: number, html: string) =>
    reply.status(status).headers(PAGE_HEADERS).send(html);

  /**
   * Runs `then` for a checked authorization request (query or form). A bad one is a page and never a redirect: anyone
   * may register a client, so sending errors back at once would make Hoist's address an open redirect (RFC 9700
   * 4.11.2). When the client and its redirect URI are valid, the page links back to it with the error.
   */
  const checked = (
    req: FastifyRequest,
    reply: FastifyReply,
    raw: unknown,
    then: (r: AuthorizationRequest, fields: Record<string, string>) => Promise<FastifyReply> | FastifyReply,
  ) => {
    const twice = Object.entries((raw ?? {}) as Fields).find(([, v]) => Array.isArray(v));
    if (twice) return page(reply, 400, refusedPage(`${twice[0]} is given more than once`));
    const fields = strings(raw);
    let target: AuthorizationTarget;
    try {
      target = oauth.target(fields);
    } catch (err) {
      if (err instanceof UntrustedRedirect) return page(reply, 400, refusedPage(err.message));
      throw err;
    }
    let request: AuthorizationRequest;
    try {
      request = oauth.authorization(fields);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      const link = backTo(req, target, { error: err.error, error_description: err.message });
      return page(reply, 400, refusedPage(err.message, { href: link, origin: destination(target.redirectUri) }));
    }
    return then(request, fields);
  };

  app.get('/oauth/authorize', hide, async (req, reply) =>
    checked(req, reply, req.query, (r, fields) => page(reply, 200, consentPage(r, fields))),
  );

  app.post('/oauth/authorize', hide, async (req, reply) =>
    checked(req, reply, req.body, async (r, fields) => {
      if (fields.decision !== 'allow') return back(req, reply, r, { error: 'access_denied' });
      const { email, password } = fields;
      if (!email || !password || email.length > 320 || password.length > 1024)
        return page(reply, 400, consentPage(r, fields, 'Enter your e-mail address and password.'));
      try {
        const code = await oauth.approve(r, email, password, { address: req.ip, userAgent: req.headers['user-agent'] });
        return back(req, reply, r, { code });
      } catch (err) {
        // A wrong password, the login limits, no room for another grant: said on the page, to try again.
        if (!(err instanceof HoistError) || !['unauthorized', 'rate_limited', 'conflict'].includes(err.code)) throw err;
        const retry = err.details.retry_after;
        if (typeof retry === 'number') reply.header('retry-after', String(retry));
        return page(reply, statusOf[err.code], consentPage(r, fields, err.message));
      }
    }),
  );

  app.post('/oauth/token', hide, async (req, reply) =>
    reply.headers(NO_STORE).send(await oauth.token((req.body ?? {}) as Fields)),
  );

  app.post('/oauth/revoke', hide, async (req, reply) => {
    await oauth.revoke(((req.body ?? {}) as Fields).token);
    return reply.status(200).headers(NO_STORE).send();
  });
};
