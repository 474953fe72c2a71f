import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { DEPLOY_HOOKS, HOOK_NAME_MAX, type DeployHooks } from '../../../core/deployments/deploy-hooks.js';
import { startedDeployment } from '../../../core/deployments/started-deployment.js';
import { bearer, principalOf, startedByOf } from '../auth.js';
import { queuedSchema, sendQueued } from '../queued-answer.js';
import { errorResponses, memberOrNull, Timestamp, Uuid } from '../schemas.js';
import { publicBase } from '../public-base.js';
import type { RouteOptions } from './index.js';

const CreatedBy = memberOrNull(
  'The member who made it (and the e-mail it had then); null for a hook made before this was recorded. A hook ' +
    "stays the account's when that member is removed: they knew its URL, so remove it (or make a new one) then.",
);

const Hook = {
  type: 'object',
  required: ['id', 'name', 'created_by', 'created_at', 'last_triggered_at'],
  properties: {
    id: Uuid,
    name: { type: 'string' },
    created_by: CreatedBy,
    created_at: Timestamp,
    last_triggered_at: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

const WHAT =
  'A deploy hook is a secret URL: a POST to it (no Authorization header; any body up to 64 KiB, ignored) starts a ' +
  "new build and deploy of the project's live version with its current settings and environment, as a build " +
  'retry does (source deploy_hook), always for production (production values, live when it succeeds), even when ' +
  'the live release was a promoted preview: for a site whose build fetches content (a CMS, a schedule). ' +
  'The URL is the credential: keep it secret, and remove the hook to revoke it. ';

const params = (withHook: boolean) => ({
  type: 'object',
  required: ['projectID', ...(withHook ? ['hookID'] : [])],
  properties: {
    projectID: { type: 'string', description: 'Project id (UUID).' },
    ...(withHook ? { hookID: { type: 'string', description: 'Deploy hook id (UUID).' } } : {}),
  },
});

/** Deploy hooks: secret URLs that build a project's live version again (list, add, remove, and the URL itself). */
const deployHooks: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const hooks = kernel.get<DeployHooks>(DEPLOY_HOOKS);
  const config = kernel.config;

  await app.register(async (owned: FastifyInstance) => {
    owned.addHook('onRequest', owned.authenticate);

    owned.get<{ Params: { projectID: string } }>(
      '/projects/:projectID/deploy-hooks',
      {
        schema: {
          tags: ['Deploy hooks'],
          summary: 'List deploy hooks',
          description: `The project's deploy hooks, oldest first; never their URLs. ${WHAT}`,
          security: bearer,
          params: params(false),
          response: {
            200: {
              type: 'object',
              required: ['deploy_hooks'],
              properties: { deploy_hooks: { type: 'array', items: Hook } },
            },
            ...errorResponses(401, 404),
          },
        },
      },
      async (req) => ({ deploy_hooks: await hooks.list(principalOf(req).accountId, req.params.projectID) }),
    );

    owned.post<{ Params: { projectID: string }; Body: { name: string } }>(
      '/projects/:projectID/deploy-hooks',
      {
        schema: {
          tags: ['Deploy hooks'],
          summary: 'Add a deploy hook',
          description:
            `Answers 201 with the hook and its url, shown this once. ${WHAT}A name that is empty, longer than ` +
            `${HOOK_NAME_MAX} characters or has control characters → 400 invalid_request (details.field: name); ` +
            "more than the plan's deploy_hooks_per_project → 403 plan_restricted. A project of another account " +
            'answers 404 like a missing one.',
          security: bearer,
          params: params(false),
          body: {
            type: 'object',
            required: ['name'],
            additionalProperties: false,
            properties: { name: { type: 'string', maxLength: HOOK_NAME_MAX, description: 'What it is for (CMS).' } },
          },
          response: {
            201: {
              ...Hook,
              required: [...Hook.required, 'url'],
              properties: {
                ...Hook.properties,
                url: { type: 'string', description: 'POST here to build and deploy; never shown again.' },
              },
            },
            ...errorResponses(400, 401, 403, 404),
          },
        },
      },
      async (req, reply) => {
        const { hook, token } = await hooks.create(
          principalOf(req).accountId,
          req.params.projectID,
          req.body.name,
          startedByOf(req),
        );
        const base = publicBase(config, req);
        reply.header('cache-control', 'no-store');
        return reply.status(201).send({ ...hook, url: `${base}/api/v1/deploy-hooks/${token}` });
      },
    );

    owned.delete<{ Params: { projectID: string; hookID: string } }>(
      '/projects/:projectID/deploy-hooks/:hookID',
      {
        schema: {
          tags: ['Deploy hooks'],
          summary: 'Remove a deploy hook',
          description: 'Its URL stops working at once (404); 204, or 404 when the project has no such hook.',
          security: bearer,
          params: params(true),
          response: { 204: { type: 'null', description: 'Removed.' }, ...errorResponses(401, 404) },
        },
      },
      async (req, reply) => {
        await hooks.remove(principalOf(req).accountId, req.params.projectID, req.params.hookID);
        return reply.status(204).send();
      },
    );
  });

  await app.register(async (open: FastifyInstance) => {
    // Whatever a sender posts (a CMS's JSON, a form, nothing) is read, up to 64 KiB, and dropped.
    open.removeAllContentTypeParsers();
    open.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 64 * 1024 }, (_req, _body, done) => done(null));

    open.post<{ Params: { token: string } }>(
      '/deploy-hooks/:token',
      {
        schema: {
          tags: ['Deploy hooks'],
          summary: 'Trigger a deploy hook',
          description:
            `${WHAT}Answers 202 with the new operation (action deploy_hook_queued). A URL no hook has (removed, ` +
            'or its project deleted) → 404; a project with no live release yet → 409 conflict; another deployment ' +
            "of the project running → 409 deployment_in_progress (details.operation_id); past the plan's " +
            'deployments_per_day → 403 plan_restricted; a body over 64 KiB → 413.',
          params: {
            type: 'object',
            required: ['token'],
            properties: { token: { type: 'string', description: "The URL's secret." } },
          },
          response: { 202: queuedSchema('deploy_hook_queued'), ...errorResponses(403, 404, 409, 413) },
        },
      },
      async (req, reply) => {
        const { project, operation } = await hooks.trigger(req.params.token);
        reply.header('cache-control', 'no-store');
        return sendQueued(reply, config, 'deploy_hook_queued', {
          started: startedDeployment(project, operation),
          replayed: false,
        });
      },
    );
  });
};

export default deployHooks;
