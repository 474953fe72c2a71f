import type { FastifyPluginAsync } from 'fastify';
import { ACCESS_GRANT_SERVICE, type AccessGrantService } from '../../../core/access/access-grant-service.js';
import type { AccessGrant } from '../../../core/entities/access-grant.js';
import { bearer, principalOf } from '../auth.js';
import { errorResponses, Timestamp, Uuid } from '../schemas.js';
import type { RouteOptions } from './index.js';

const KEPT =
  'Grants are added only while the project is private. Making a private project ' +
  'draft or public keeps its grants, unused, until it is private again; ' +
  'they are listed and can be removed whatever the visibility. A project of another ' +
  'account answers 404 like a missing one.';

const Grant = {
  type: 'object',
  required: ['id', 'email', 'created_at'],
  properties: { id: Uuid, email: { type: 'string', description: 'Trimmed and lower-cased.' }, created_at: Timestamp },
} as const;

const params = (withGrant: boolean) => ({
  type: 'object',
  required: ['projectID', ...(withGrant ? ['grantID'] : [])],
  properties: {
    projectID: { type: 'string', description: 'Project id (UUID).' },
    ...(withGrant
      ? { grantID: { type: 'string', maxLength: 320, description: 'The grant id, or the granted e-mail address.' } }
      : {}),
  },
});

const view = (g: AccessGrant) => ({ id: g.id, email: g.email, created_at: g.createdAt.toISOString() });

/** Access: the e-mail addresses granted access to a private project's site (list, add, remove). */
const accessGrants: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const service = kernel.get<AccessGrantService>(ACCESS_GRANT_SERVICE);
  app.addHook('onRequest', app.authenticate);

  app.get<{ Params: { projectID: string } }>(
    '/projects/:projectID/access-grants',
    {
      schema: {
        tags: ['Access'],
        summary: 'List access grants',
        description:
          "The e-mail addresses granted access to the project's site, oldest first, on any " +
          'project: in_effect says whether they let anyone in now ' +
          `(true while the project is private; on a draft or public project they are kept, unused). ${KEPT}`,
        security: bearer,
        params: params(false),
        response: {
          200: {
            type: 'object',
            required: ['access_grants', 'in_effect'],
            properties: {
              access_grants: { type: 'array', items: Grant },
              in_effect: {
                type: 'boolean',
                description:
                  'true while the project is private: the grants let their addresses sign in. false: kept, unused.',
              },
            },
          },
          ...errorResponses(401, 404),
        },
      },
    },
    async (req) => {
      const { grants, inEffect } = await service.list(principalOf(req).accountId, req.params.projectID);
      return { access_grants: grants.map(view), in_effect: inEffect };
    },
  );

  app.post<{ Params: { projectID: string }; Body: { email: string } }>(
    '/projects/:projectID/access-grants',
    {
      schema: {
        tags: ['Access'],
        summary: 'Grant an e-mail address access',
        description:
          'Grants the address (trimmed, lower-cased) access to the site: on the sign-in ' +
          'page it asks for a one-time code, mailed to it. ' +
          'Answers 201 with the new grant, or 200 with the existing one when the address is ' +
          'already granted (adding is idempotent). ' +
          "An implausible address → 400 invalid_request (field email); beyond the plan's " +
          'access_grants_per_project → 403 plan_restricted ' +
          'with feature, plan, required_plan, limit and usage. On a draft or public project ' +
          '→ 409 conflict, saying to make it private first. ' +
          KEPT,
        security: bearer,
        params: params(false),
        body: {
          type: 'object',
          required: ['email'],
          additionalProperties: false,
          properties: { email: { type: 'string', maxLength: 320, description: 'The e-mail address to grant.' } },
        },
        response: { 200: Grant, 201: Grant, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (req, reply) => {
      const { grant, created } = await service.add(principalOf(req).accountId, req.params.projectID, req.body.email);
      return reply.status(created ? 201 : 200).send(view(grant));
    },
  );

  app.delete<{ Params: { projectID: string; grantID: string } }>(
    '/projects/:projectID/access-grants/:grantID',
    {
      schema: {
        tags: ['Access'],
        summary: 'Remove an access grant',
        description:
          "Answers 204. The address's visitors lose access at their next request, and codes " +
          'mailed to it stop working. ' +
          `404 when the project has no such grant. ${KEPT}`,
        security: bearer,
        params: params(true),
        response: { 204: { type: 'null', description: 'Removed.' }, ...errorResponses(401, 404) },
      },
    },
    async (req, reply) => {
      await service.remove(principalOf(req).accountId, req.params.projectID, req.params.grantID);
      return reply.status(204).send();
    },
  );
};

export default accessGrants;
