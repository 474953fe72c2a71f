import type { FastifyPluginAsync } from 'fastify';
import { ENVIRONMENT_SERVICE, type EnvironmentService } from '../../../core/environment/environment-service.js';
import { NAME_MAX, RULES_TEXT, SCOPES, TARGETS } from '../../../core/environment/variable-rules.js';
import { bearer, principalOf } from '../auth.js';
import { errorResponses, Timestamp } from '../schemas.js';
import type { RouteOptions } from './index.js';

const NEXT_DEPLOYMENT =
  'A change applies to the next deployment: a deployment keeps the values it ' +
  'started with (its retries and restarts included); ' +
  'builds get variables of scope build or both, running releases those of scope runtime or both.';
const TARGETS_TEXT =
  'A name may have one value per target: all (every deployment), production or preview; a deployment takes its ' +
  "own target's value of a name, else the all one. A preview that took a production- or preview-only value is not " +
  'promoted as it runs (409 not_promotable, details.reason preview_environment).';
const Target = {
  type: 'string',
  enum: TARGETS,
  description: 'all (every deployment), production (production deployments only) or preview (previews only).',
} as const;

const Variable = {
  type: 'object',
  required: ['name', 'scope', 'target', 'digest', 'created_at', 'updated_at'],
  properties: {
    name: { type: 'string' },
    scope: { type: 'string', enum: SCOPES },
    target: Target,
    digest: {
      type: 'string',
      description:
        'hmac-sha256:<hex>, keyed per project: equal values of one project have equal ' +
        'digests, and a value cannot be found by hashing guesses.',
    },
    created_at: Timestamp,
    updated_at: Timestamp,
  },
} as const;

const params = (withName: boolean) => ({
  type: 'object',
  required: ['projectID', ...(withName ? ['name'] : [])],
  properties: {
    projectID: { type: 'string', description: 'Project id (UUID).' },
    ...(withName ? { name: { type: 'string', maxLength: NAME_MAX, description: 'Variable name.' } } : {}),
  },
});

/** Environment: list, set and remove a project's encrypted environment variables (values are never returned). */
const environment: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const service = kernel.get<EnvironmentService>(ENVIRONMENT_SERVICE);
  app.addHook('onRequest', app.authenticate);

  app.get<{ Params: { projectID: string } }>(
    '/projects/:projectID/environment',
    {
      schema: {
        tags: ['Environment'],
        summary: 'List environment variables',
        description:
          'Names, scopes, targets, keyed digests and times, by name then target; values are encrypted at rest ' +
          '(AES-256-GCM, a data key per project) and never returned. ' +
          `${TARGETS_TEXT} ${NEXT_DEPLOYMENT} A project of another account answers 404 like a missing one.`,
        security: bearer,
        params: params(false),
        response: {
          200: {
            type: 'object',
            required: ['environment'],
            properties: { environment: { type: 'array', items: Variable } },
          },
          ...errorResponses(401, 404),
        },
      },
    },
    async (req) => ({ environment: await service.list(principalOf(req).accountId, req.params.projectID) }),
  );

  app.put<{ Params: { projectID: string; name: string }; Body: { value: string; scope?: string; target?: string } }>(
    '/projects/:projectID/environment/:name',
    {
      schema: {
        tags: ['Environment'],
        summary: 'Set an environment variable',
        description:
          `Creates the variable's value for the target (201) or replaces it and its scope (200); the answer ` +
          `never holds the value. ${TARGETS_TEXT} ${RULES_TEXT} ` +
          'A reserved or malformed name, a bad scope or target or a non-string value → 400 ' +
          'invalid_request (details.field, details.name). ' +
          "A value longer than the plan's environment_value_bytes (UTF-8 bytes), or a new " +
          'value beyond its environment_variables_per_project (which counts values) → 403 plan_restricted ' +
          `with feature, plan, required_plan, limit and usage. ${NEXT_DEPLOYMENT}`,
        security: bearer,
        params: params(true),
        body: {
          type: 'object',
          required: ['value'],
          additionalProperties: false,
          properties: {
            value: {
              type: 'string',
              description: 'The value (text, no NUL); its size in UTF-8 bytes is capped by the plan.',
            },
            scope: {
              type: 'string',
              enum: SCOPES,
              default: 'both',
              description: 'build (builds only), runtime (running releases only) or both (default).',
            },
            target: { ...Target, default: 'all' },
          },
        },
        response: { 200: Variable, 201: Variable, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (req, reply) => {
      const { variable, created } = await service.set(principalOf(req).accountId, req.params.projectID, {
        name: req.params.name,
        ...req.body,
      });
      return reply.status(created ? 201 : 200).send(variable);
    },
  );

  app.delete<{ Params: { projectID: string; name: string }; Querystring: { target?: string } }>(
    '/projects/:projectID/environment/:name',
    {
      schema: {
        tags: ['Environment'],
        summary: 'Remove an environment variable',
        description:
          'Removes every value of the variable, or with ?target= its value for that target only. Answers 204; ' +
          `404 when the project has no such value; 400 for a bad target. ${NEXT_DEPLOYMENT}`,
        security: bearer,
        params: params(true),
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { target: { ...Target, description: 'Remove only the value for this target.' } },
        },
        response: { 204: { type: 'null', description: 'Removed.' }, ...errorResponses(400, 401, 404) },
      },
    },
    async (req, reply) => {
      await service.remove(principalOf(req).accountId, req.params.projectID, req.params.name, req.query.target);
      return reply.status(204).send();
    },
  );
};

export default environment;
