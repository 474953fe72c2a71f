import type { FastifyPluginAsync } from 'fastify';
import {
  ACCESS_REQUEST_SERVICE,
  type AccessRequestInput,
  type AccessRequestService,
} from '../../../core/access-requests/access-request-service.js';
import { errorResponses } from '../schemas.js';
import type { RouteOptions } from './index.js';

/** Access: the public request for an account (registration is disabled; an admin approves requests). */
const accessRequests: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const service = kernel.get<AccessRequestService>(ACCESS_REQUEST_SERVICE);

  app.post<{ Body: AccessRequestInput }>(
    '/access-requests',
    {
      schema: {
        tags: ['Access'],
        summary: 'Ask for an account',
        description:
          'No authentication. Records the request for an administrator (`hoist ' +
          'access-requests approve`), who creates the account; ' +
          'the requester then gets a mail with a token to set a password. Answers 202 ' +
          '{status: "received"} the same way for a repeat ' +
          'and for an e-mail that already has an account, and then stores nothing. Limited ' +
          'in sliding windows of mailWindowSeconds: ' +
          'past mailMaxPerAddress requests from one client address the answer is 429 ' +
          'rate_limited with Retry-After; past ' +
          'mailMaxPerRecipient for one e-mail the answer stays 202 and nothing is stored.',
        body: {
          type: 'object',
          required: ['email'],
          additionalProperties: false,
          properties: {
            email: { type: 'string', minLength: 3, maxLength: 320 },
            name: { type: 'string', maxLength: 200 },
            message: { type: 'string', maxLength: 2000, description: 'What the account is for.' },
          },
        },
        response: {
          202: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['received'] } } },
          ...errorResponses(400, 429),
        },
      },
    },
    async (req, reply) => {
      await service.submit(req.body, { address: req.ip });
      return reply.status(202).send({ status: 'received' });
    },
  );
};

export default accessRequests;
