import type { FastifyPluginAsync } from 'fastify';
import { RETRY_DELAYS_MS } from '../../../core/webhooks/webhook-deliveries.js';
import { DEFAULT_EVENTS, URL_MAX, WEBHOOK_EVENTS } from '../../../core/webhooks/webhook-rules.js';
import { DELIVERIES_MAX, WEBHOOK_SERVICE, type WebhookService } from '../../../core/webhooks/webhook-service.js';
import { bearer, principalOf, startedByOf } from '../auth.js';
import { errorResponses, memberOrNull, Timestamp, Uuid } from '../schemas.js';
import type { RouteOptions } from './index.js';

const NullableTimestamp = { type: ['string', 'null'], format: 'date-time' } as const;

const Delivery = {
  type: 'object',
  required: [
    'id',
    'webhook_id',
    'event',
    'operation_id',
    'status',
    'attempts',
    'response_status',
    'error',
    'next_attempt_at',
    'created_at',
    'updated_at',
  ],
  properties: {
    id: {
      ...Uuid,
      description: 'The delivery id: the webhook-id header of every try (the same on each: de-duplicate by it).',
    },
    webhook_id: Uuid,
    event: { type: 'string', description: `${WEBHOOK_EVENTS.join(', ')} or ping.` },
    operation_id: { type: ['string', 'null'], description: 'The operation the event is about; null for a ping.' },
    status: {
      type: 'string',
      enum: ['pending', 'delivered', 'failed'],
      description: 'pending: tries are left (or one is under way); delivered: a try got a 2xx; failed: none is left.',
    },
    attempts: { type: 'integer', description: 'Tries made so far (at most 6).' },
    response_status: { type: ['integer', 'null'], description: "The last try's answer status; null when it got none." },
    error: {
      type: ['string', 'null'],
      description:
        'Why the last try failed: `answered <status>`, or no answer (`address_refused`, `dns`, `connect`, ' +
        '`timeout`, `tls`, `other`, with the host). null once delivered.',
    },
    next_attempt_at: { ...NullableTimestamp, description: 'When the next try is due, while pending.' },
    created_at: Timestamp,
    updated_at: Timestamp,
  },
} as const;

const CreatedBy = memberOrNull(
  'The member who made it (and the e-mail it had then); null for a webhook made before this was recorded. A ' +
    "webhook stays the account's when that member is removed: they knew its URL and secret, so remove it (or make " +
    'a new one) then.',
);

const Webhook = {
  type: 'object',
  required: ['id', 'url', 'events', 'created_by', 'created_at', 'last_delivery'],
  properties: {
    id: Uuid,
    url: { type: 'string' },
    events: { type: 'array', items: { type: 'string', enum: WEBHOOK_EVENTS } },
    created_by: CreatedBy,
    created_at: Timestamp,
    last_delivery: { anyOf: [Delivery, { type: 'null' }] },
  },
} as const;

/** A wait as people write it: 10 s, 5 min, 2 h. */
const duration = (ms: number) =>
  ms < 60_000 ? `${ms / 1000} s` : ms < 3_600_000 ? `${ms / 60_000} min` : `${ms / 3_600_000} h`;

const HOW =
  'When a deployment of the project ends (a deploy, a preview, a promote or rollback), Hoist POSTs a JSON body ' +
  '`{type, timestamp, data: {project: {id, name}, operation}}` to every webhook of the project that receives that ' +
  'event: type is deployment.succeeded, deployment.failed or deployment.canceled, and operation is what ' +
  'GET /api/v1/operations/{id} answers (result.url is the live URL). Each delivery is signed as Standard Webhooks ' +
  'does, so its libraries verify it: headers webhook-id (the delivery id, the same on every try), webhook-timestamp ' +
  '(Unix seconds) and webhook-signature `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">` ' +
  'under the secret (the bytes of its base64 after `whsec_`); also x-hoist-event. A 2xx answer within ' +
  'webhookTimeoutSeconds delivers it; any other answer, or none, is tried again after ' +
  `${RETRY_DELAYS_MS.map(duration).join(', ')} ` +
  '(six tries), then the delivery failed. No redirect is followed. Hoist posts only to public addresses: a URL ' +
  'whose host is, or resolves to, a loopback, private or link-local address is refused (400 when it is written ' +
  'as such an address, else its deliveries fail with address_refused), unless the operator allowed them ' +
  '(webhookPrivateAddresses). Deliveries are kept 30 days. A project of another account answers 404 like a ' +
  'missing one.';

const params = (withHook: boolean) => ({
  type: 'object',
  required: ['projectID', ...(withHook ? ['webhookID'] : [])],
  properties: {
    projectID: { type: 'string', description: 'Project id (UUID).' },
    ...(withHook ? { webhookID: { type: 'string', description: 'Webhook id (UUID).' } } : {}),
  },
});

type HookParams = { projectID: string; webhookID: string };

/** Webhooks: where a project's deployment events are posted (list, add, remove, ping, deliveries). */
const webhooks: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const service = kernel.get<WebhookService>(WEBHOOK_SERVICE);
  app.addHook('onRequest', app.authenticate);

  app.get<{ Params: { projectID: string } }>(
    '/projects/:projectID/webhooks',
    {
      schema: {
        tags: ['Webhooks'],
        summary: 'List webhooks',
        description: `The project's webhooks, oldest first, each with its last delivery; never a secret. ${HOW}`,
        security: bearer,
        params: params(false),
        response: {
          200: {
            type: 'object',
            required: ['webhooks'],
            properties: { webhooks: { type: 'array', items: Webhook } },
          },
          ...errorResponses(401, 404),
        },
      },
    },
    async (req) => ({ webhooks: await service.list(principalOf(req).accountId, req.params.projectID) }),
  );

  app.post<{ Params: { projectID: string }; Body: { url: string; events?: string[] } }>(
    '/projects/:projectID/webhooks',
    {
      schema: {
        tags: ['Webhooks'],
        summary: 'Add a webhook',
        description:
          'Adds a webhook for url and events (when left out: deployment.succeeded, deployment.failed and ' +
          'deployment.canceled; deployment.started is sent when a deployment or a retry starts) and answers 201 ' +
          'with its signing secret, shown this once: keep it to verify deliveries. A url that is not http(s), ' +
          'carries a user name or password, or names a loopback, private or link-local address or a single-label ' +
          'host (localhost) → 400 invalid_request (details.field: url); an unknown event → 400 (details.field: ' +
          "events). More than the plan's webhooks_per_project → 403 plan_restricted. " +
          HOW,
        security: bearer,
        params: params(false),
        body: {
          type: 'object',
          required: ['url'],
          additionalProperties: false,
          properties: {
            url: { type: 'string', maxLength: URL_MAX, description: 'An http or https URL.' },
            events: {
              type: 'array',
              minItems: 1,
              maxItems: WEBHOOK_EVENTS.length,
              items: { type: 'string' },
              description: `Any of ${WEBHOOK_EVENTS.join(', ')} (by default: ${DEFAULT_EVENTS.join(', ')}).`,
            },
          },
        },
        response: {
          201: {
            ...Webhook,
            required: [...Webhook.required, 'secret'],
            properties: {
              ...Webhook.properties,
              secret: { type: 'string', description: 'whsec_<base64>: signs every delivery; never shown again.' },
            },
          },
          ...errorResponses(400, 401, 403, 404),
        },
      },
    },
    async (req, reply) =>
      reply
        .status(201)
        .send(await service.create(principalOf(req).accountId, req.params.projectID, req.body, startedByOf(req))),
  );

  app.delete<{ Params: HookParams }>(
    '/projects/:projectID/webhooks/:webhookID',
    {
      schema: {
        tags: ['Webhooks'],
        summary: 'Remove a webhook',
        description: 'Removes the webhook and its deliveries (none is tried again); 204, or 404 when there is none.',
        security: bearer,
        params: params(true),
        response: { 204: { type: 'null', description: 'Removed.' }, ...errorResponses(401, 404) },
      },
    },
    async (req, reply) => {
      await service.remove(principalOf(req).accountId, req.params.projectID, req.params.webhookID);
      return reply.status(204).send();
    },
  );

  app.post<{ Params: HookParams }>(
    '/projects/:projectID/webhooks/:webhookID/ping',
    {
      schema: {
        tags: ['Webhooks'],
        summary: 'Ping a webhook',
        description:
          'Queues a delivery of a `ping` event (data: the project and the webhook), signed and tried as any ' +
          'other, and answers 202 with it, pending: see how it went in the deliveries list.',
        security: bearer,
        params: params(true),
        response: { 202: Delivery, ...errorResponses(401, 404) },
      },
    },
    async (req, reply) =>
      reply
        .status(202)
        .send(await service.ping(principalOf(req).accountId, req.params.projectID, req.params.webhookID)),
  );

  app.get<{ Params: HookParams; Querystring: { limit: number } }>(
    '/projects/:projectID/webhooks/:webhookID/deliveries',
    {
      schema: {
        tags: ['Webhooks'],
        summary: 'List deliveries of a webhook',
        description:
          'Its deliveries of the last 30 days, newest first: status, tries and the last answer; never a body.',
        security: bearer,
        params: params(true),
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { limit: { type: 'integer', minimum: 1, maximum: DELIVERIES_MAX, default: 20 } },
        },
        response: {
          200: {
            type: 'object',
            required: ['deliveries'],
            properties: { deliveries: { type: 'array', items: Delivery } },
          },
          ...errorResponses(400, 401, 404),
        },
      },
    },
    async (req) => ({
      deliveries: await service.deliveriesOf(
        principalOf(req).accountId,
        req.params.projectID,
        req.params.webhookID,
        req.query.limit,
      ),
    }),
  );
};

export default webhooks;
