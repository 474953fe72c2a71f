import type { FastifyPluginAsync } from 'fastify';
import {
  AGENT_AUTH_SERVICE,
  AGENT_TTL,
  MAX_AGENT_GRANTS,
  type AgentAuthService,
} from '../../../core/auth/agent-auth-service.js';
import { bearer, principalOf } from '../auth.js';
import { errorResponses, Timestamp, Uuid } from '../schemas.js';
import type { RouteOptions } from './index.js';

const tags = ['Agent tokens'];

const WHAT =
  'Agent tokens are the bearer tokens of the agent-tool interface (the MCP server at /agent/v1/mcp): never valid as ' +
  'REST tokens, as REST tokens are never valid there. They act as the user who made them, on the account of that ' +
  'user. A token comes from this API (source api), from an agent connected through OAuth (source oauth: it renews ' +
  'itself with a refresh token until its grant expires) or from the admin CLI (source admin). Revoking one, a ' +
  "password reset or the user's removal refuses its tokens at once, on every API process.";

const Grant = {
  type: 'object',
  required: ['id', 'name', 'source', 'created_at', 'expires_at'],
  properties: {
    id: { ...Uuid, description: "The grant's id; every token of it carries it as `jti`." },
    name: { type: 'string' },
    source: { type: 'string', enum: ['admin', 'api', 'oauth'], description: 'How it was made.' },
    created_at: Timestamp,
    expires_at: { ...Timestamp, description: 'When its tokens stop being accepted.' },
  },
} as const;

/** Agent tokens of the authenticated user: list, create, revoke. */
const agentTokens: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const service = kernel.get<AgentAuthService>(AGENT_AUTH_SERVICE);
  app.addHook('onRequest', app.authenticate);

  app.get(
    '/auth/agent-tokens',
    {
      schema: {
        tags,
        summary: "List the user's agent tokens",
        description: `Those neither revoked nor expired, newest first. ${WHAT}`,
        security: bearer,
        response: {
          200: {
            type: 'object',
            required: ['agent_tokens'],
            properties: { agent_tokens: { type: 'array', items: Grant } },
          },
          ...errorResponses(401),
        },
      },
    },
    async (req) => ({ agent_tokens: await service.list(principalOf(req)) }),
  );

  app.post<{ Body: { name: string; ttl_seconds?: number } }>(
    '/auth/agent-tokens',
    {
      schema: {
        tags,
        summary: 'Create an agent token',
        description:
          `Answers 201 with the token, shown this once. A user holds at most ${MAX_AGENT_GRANTS} (409 conflict past ` +
          `it: revoke one). A bad name or ttl_seconds → 400 invalid_request. ${WHAT}`,
        security: bearer,
        body: {
          type: 'object',
          required: ['name'],
          additionalProperties: false,
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 100, description: 'What it is for, as the list shows.' },
            ttl_seconds: {
              type: 'integer',
              minimum: AGENT_TTL.min,
              maximum: AGENT_TTL.max,
              default: AGENT_TTL.default,
              description: 'Lifetime in seconds.',
            },
          },
        },
        response: {
          201: {
            ...Grant,
            required: [...Grant.required, 'token'],
            properties: { ...Grant.properties, token: { type: 'string', description: 'The agent token (JWT).' } },
          },
          ...errorResponses(400, 401, 409),
        },
      },
    },
    async (req, reply) =>
      reply.status(201).send(await service.create(principalOf(req), req.body.name, req.body.ttl_seconds)),
  );

  app.delete<{ Params: { grantID: string } }>(
    '/auth/agent-tokens/:grantID',
    {
      schema: {
        tags,
        summary: 'Revoke an agent token',
        description:
          "Its tokens (and an OAuth grant's refresh token) are refused at once. Another user's or an already revoked " +
          `one → 404 not_found. ${WHAT}`,
        security: bearer,
        params: {
          type: 'object',
          required: ['grantID'],
          properties: { grantID: { type: 'string', description: 'Agent token (grant) id (UUID).' } },
        },
        response: { 204: { type: 'null', description: 'Revoked.' }, ...errorResponses(401, 404) },
      },
    },
    async (req, reply) => {
      await service.revoke(principalOf(req), req.params.grantID);
      return reply.status(204).send();
    },
  );
};

export default agentTokens;
