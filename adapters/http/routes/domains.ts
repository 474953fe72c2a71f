import type { FastifyPluginAsync } from 'fastify';
import { DOMAIN_SERVICE, type DomainService } from '../../../core/domains/domain-service.js';
import { DOMAIN_STATES, STATES_TEXT } from '../../../core/domains/domain-states.js';
import { HOSTNAME_MAX } from '../../../core/domains/hostname-rules.js';
import { bearer, principalOf } from '../auth.js';
import { errorResponses, Timestamp, Uuid } from '../schemas.js';
import type { RouteOptions } from './index.js';

const Nullable = (s: object) => ({ anyOf: [s, { type: 'null' }] });

const Domain = {
  type: 'object',
  required: [
    'id',
    'project_id',
    'hostname',
    'status',
    'message',
    'url',
    'records',
    'verified_at',
    'last_checked_at',
    'next_check_at',
    'created_at',
    'updated_at',
  ],
  properties: {
    id: Uuid,
    project_id: Uuid,
    hostname: { type: 'string', description: 'The customer subdomain, lowercased, without a trailing dot.' },
    status: { type: 'string', enum: DOMAIN_STATES, description: `One of ${STATES_TEXT}.` },
    message: {
      type: ['string', 'null'],
      description: 'What the last check found wrong, in words; null when nothing is.',
    },
    url: { type: 'string', description: 'Where the project is served on this domain once it is active.' },
    records: {
      type: 'array',
      description:
        'The DNS records to create: a TXT record holding the token at ' +
        '_hoist-challenge.<hostname>, and a CNAME from the hostname to the project host.',
      items: {
        type: 'object',
        required: ['type', 'name', 'value', 'purpose'],
        properties: {
          type: { type: 'string', enum: ['TXT', 'CNAME'] },
          name: { type: 'string' },
          value: { type: 'string' },
          purpose: { type: 'string' },
        },
      },
    },
    verified_at: Nullable(Timestamp),
    last_checked_at: Nullable(Timestamp),
    next_check_at: {
      ...Timestamp,
      description:
        'When the records are checked next: often at first, backing off while they are ' +
        'not right; periodically once active.',
    },
    created_at: Timestamp,
    updated_at: Timestamp,
  },
} as const;

const params = (withDomain: boolean) => ({
  type: 'object',
  required: ['projectID', ...(withDomain ? ['domainID'] : [])],
  properties: {
    projectID: { type: 'string', description: 'Project id (UUID).' },
    ...(withDomain ? { domainID: { type: 'string', description: 'Domain id (UUID).' } } : {}),
  },
});

type Params = { projectID: string; domainID: string };

/** Domains: customer-owned subdomains of a project, their DNS setup and reconciliation. */
const domains: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const service = kernel.get<DomainService>(DOMAIN_SERVICE);
  app.addHook('onRequest', app.authenticate);
  const base = '/projects/:projectID/domains';

  app.get<{ Params: Params }>(
    base,
    {
      schema: {
        tags: ['Domains'],
        summary: 'List custom domains',
        description:
          "The project's customer subdomains, oldest first, with their state and setup " +
          'records. A project of another account answers 404 like a missing one.',
        security: bearer,
        params: params(false),
        response: {
          200: { type: 'object', required: ['domains'], properties: { domains: { type: 'array', items: Domain } } },
          ...errorResponses(401, 404),
        },
      },
    },
    async (req) => ({ domains: await service.list(principalOf(req).accountId, req.params.projectID) }),
  );

  app.post<{ Params: Params; Body: { hostname: string } }>(
    base,
    {
      schema: {
        tags: ['Domains'],
        summary: 'Add a custom domain',
        description:
          'Adds a subdomain you own (e.g. app.example.com) as pending and answers 201 with ' +
          'the two DNS records to create. ' +
          'Once the TXT record holds the token the domain is verified; once the CNAME also ' +
          'points at the project host it is active and served. ' +
          'Records are checked on a schedule, or at once with POST …/verify. ' +
          'Other projects (of any account) may claim the same hostname at the same time: a ' +
          'pending claim blocks no one. The first claim whose token ' +
          'the TXT record holds gets the hostname (verified, then active), and the other ' +
          "projects' pending claims of it become failed, with the reason in message. " +
          "A claim whose token the record holds while the holder's is gone takes the name " +
          'over (the holder becomes failed): control of the DNS decides, ' +
          'so adding succeeds even while another project holds the name (message says so). ' +
          'A claim still pending after domainPendingTtlSeconds ' +
          '(7 days) is removed by the scheduled checks. ' +
          `400 invalid_request (details.field hostname) for an apex domain (by the Public ` +
          `Suffix List: example.com, example.co.uk), an IP address, a wildcard, ` +
          `the service's apps domain or a name under it, or a name that is not a valid ` +
          `hostname or is longer than ${HOSTNAME_MAX} characters. ` +
          '403 plan_restricted (feature customer_subdomains, with plan, required_plan, ' +
          "limit, usage) beyond the plan's domains per account. " +
          '409 conflict (details.domain_id) when this project has the hostname already.',
        security: bearer,
        params: params(false),
        body: {
          type: 'object',
          required: ['hostname'],
          additionalProperties: false,
          properties: {
            hostname: {
              type: 'string',
              description: 'A subdomain, e.g. app.example.com (case and a trailing dot are ignored).',
            },
          },
        },
        response: { 201: Domain, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (req, reply) =>
      reply.status(201).send(await service.add(principalOf(req).accountId, req.params.projectID, req.body.hostname)),
  );

  app.get<{ Params: Params }>(
    `${base}/:domainID`,
    {
      schema: {
        tags: ['Domains'],
        summary: 'Read a custom domain',
        description: 'Its state, what is wrong (message), when it was and will be checked, and the records to create.',
        security: bearer,
        params: params(true),
        response: { 200: Domain, ...errorResponses(401, 404) },
      },
    },
    async (req) => service.get(principalOf(req).accountId, req.params.projectID, req.params.domainID),
  );

  app.post<{ Params: Params }>(
    `${base}/:domainID/verify`,
    {
      schema: {
        tags: ['Domains'],
        summary: 'Check a custom domain now',
        description:
          'Looks the TXT and CNAME records up now and answers the domain in its new state ' +
          '(200). A failed lookup (timeout, server failure) keeps the state and says so in ' +
          'message. ' +
          'This is also how a failed domain (one another project holds) is checked again: ' +
          "when the TXT record holds its token and not the holder's, it takes the hostname " +
          'over; ' +
          'while the record holds both, the holder keeps it and this domain stays failed.',
        security: bearer,
        params: params(true),
        response: { 200: Domain, ...errorResponses(401, 404) },
      },
    },
    async (req) => service.verify(principalOf(req).accountId, req.params.projectID, req.params.domainID),
  );

  app.delete<{ Params: Params }>(
    `${base}/:domainID`,
    {
      schema: {
        tags: ['Domains'],
        summary: 'Remove a custom domain',
        description:
          'Answers 204; the edge stops serving the hostname at once and it can be added ' +
          'again (by anyone). Deleting a project removes its domains.',
        security: bearer,
        params: params(true),
        response: { 204: { type: 'null', description: 'Removed.' }, ...errorResponses(401, 404) },
      },
    },
    async (req, reply) => {
      await service.remove(principalOf(req).accountId, req.params.projectID, req.params.domainID);
      return reply.status(204).send();
    },
  );
};

export default domains;
