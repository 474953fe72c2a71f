import type { FastifyPluginAsync } from 'fastify';
import { AGENT_AUTH_SERVICE, type AgentAuthService } from '../../core/auth/agent-auth-service.js';
import { unauthorized } from '../../core/errors.js';
import type { Kernel } from '../kernel.js';
import { bearerToken, principalOf } from './auth.js';
import { errorResponses, Uuid } from './schemas.js';
import { mcpRoutes } from './agent-mcp.js';
import { RESOURCE_METADATA_PATH } from './oauth.js';
import { publicBase } from './public-base.js';
import { refusedCounter } from './rate-limit.js';
import { openToBrowsers } from './cors.js';

/**
 * The agent-tool interface, under /agent/v1 beside the REST API: it takes only agent tokens (OAuth's, oauth.ts, or
 * made with `hoist tokens create`), never REST ones, as REST never takes agent tokens. Its tools are served to
 * coding agents as a Model Context Protocol server at /agent/v1/mcp (agent-mcp.ts).
 * Kept out of the REST OpenAPI document.
 */
export const agentTools: FastifyPluginAsync<{ kernel: Kernel }> = async (app, { kernel }) => {
  const agents = kernel.get<AgentAuthService>(AGENT_AUTH_SERVICE);
  const countRefused = refusedCounter(app, kernel.config);
  // Before the authentication below: a browser's preflight carries no token.
  await openToBrowsers(app, () => true);
  app.addHook('onRequest', async (req, reply) => {
    const token = bearerToken(req);
    try {
      if (!token) throw unauthorized('Missing or malformed Authorization header; expected "Bearer <agent token>"');
      req.principal = await agents.authenticate(token);
    } catch (err) {
      // Where an MCP client finds how to get a token (RFC 9728): OAuth with its user's consent.
      // Percent-encoded where a quoted-string would end or escape: the Host header is the client's to write.
      const metadata = `${publicBase(kernel.config, req)}${RESOURCE_METADATA_PATH}`.replace(
        /["\\]/g,
        (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
      );
      reply.header('www-authenticate', `Bearer resource_metadata="${metadata}"`);
      await countRefused?.(req, reply);
      throw err;
    }
  });

  app.get(
    '/whoami',
    {
      schema: {
        hide: true,
        response: {
          200: {
            type: 'object',
            required: ['user', 'account'],
            properties: {
              user: { type: 'object', required: ['id', 'email'], properties: { id: Uuid, email: { type: 'string' } } },
              account: { type: 'object', required: ['id'], properties: { id: Uuid } },
            },
          },
          ...errorResponses(401),
        },
      },
    },
    async (req) => {
      const p = principalOf(req);
      return { user: { id: p.userId, email: p.email }, account: { id: p.accountId } };
    },
  );
  await mcpRoutes(app, kernel);
};
