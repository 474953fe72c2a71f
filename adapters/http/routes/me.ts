import type { FastifyPluginAsync } from 'fastify';
import { ROLES } from '../../../core/accounts/roles.js';
import { BILLING_SERVICE, type BillingService } from '../../../core/billing/billing-service.js';
import { bearer, principalOf } from '../auth.js';
import { errorResponses, Timestamp, Uuid } from '../schemas.js';
import { sendOnce } from '../send-once.js';
import type { RouteOptions } from './index.js';

const Me = {
  type: 'object',
  required: ['user', 'account'],
  properties: {
    user: {
      type: 'object',
      required: ['id', 'email', 'email_verified', 'role'],
      properties: {
        id: Uuid,
        email: { type: 'string' },
        email_verified: { type: 'boolean' },
        role: {
          type: 'string',
          enum: ROLES,
          description: 'owner (also manages members and the account) or member (GET /account/members).',
        },
      },
    },
    account: {
      type: 'object',
      required: ['id', 'name', 'plan', 'billing_category', 'subscription_status', 'created_at'],
      properties: {
        id: Uuid,
        name: { type: 'string' },
        plan: { type: 'string', description: 'Plan id: free, pro or team.' },
        billing_category: { type: 'string', description: 'individual or business.' },
        subscription_status: { type: 'string', description: 'active, past_due or canceled.' },
        created_at: Timestamp,
      },
    },
  },
} as const;

/** Account and billing: the authenticated identity (`/me`) and renaming the account. */
const me: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const service = kernel.get<BillingService>(BILLING_SERVICE);
  app.addHook('onRequest', app.authenticate);

  app.get(
    '/me',
    {
      schema: {
        tags: ['Account and billing'],
        summary: 'The authenticated user and account',
        description: 'The user the bearer token belongs to and their account, with its plan and billing state.',
        security: bearer,
        response: { 200: Me, ...errorResponses(401) },
      },
    },
    async (req, reply) => sendOnce(reply, await service.me(principalOf(req).userId)),
  );

  app.patch<{ Body: { name: string } }>(
    '/me',
    {
      schema: {
        tags: ['Account and billing'],
        summary: 'Rename the account',
        description:
          'Sets the display name of the authenticated account; answers like GET /me. Only an owner may: a member ' +
          'gets 403 forbidden.',
        security: bearer,
        body: {
          type: 'object',
          required: ['name'],
          additionalProperties: false,
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 200, description: 'Account name, 1 to 200 characters.' },
          },
        },
        response: { 200: Me, ...errorResponses(400, 401, 403) },
      },
    },
    async (req) => service.renameAccount(principalOf(req).userId, req.body.name),
  );
};

export default me;
