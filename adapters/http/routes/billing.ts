import type { FastifyPluginAsync } from 'fastify';
import { BILLING_SERVICE, type BillingService } from '../../../core/billing/billing-service.js';
import { ENTITLEMENT_SERVICE, type EntitlementService } from '../../../core/billing/entitlement-service.js';
import { plans } from '../../../core/billing/plans.js';
import { bearer, principalOf } from '../auth.js';
import { errorResponses } from '../schemas.js';
import type { RouteOptions } from './index.js';

const count = { type: ['integer', 'null'] } as const;
const limitKeys = Object.keys(plans.free.limits);

const Limits = {
  type: 'object',
  required: limitKeys,
  description:
    'Plan limits; null means unlimited. projects and private_projects count per ' +
    'account, deployments_per_day per account and UTC day, ' +
    'archive_bytes per upload, access_grants_per_project and ' +
    'environment_variables_per_project per project, environment_value_bytes per ' +
    'value, ' +
    'customer_subdomains per account, concurrent_builds per account, release_retention per project ' +
    '(releases kept, the live one included; older ones are pruned and can no longer be promoted), ' +
    'preview_ttl_hours per preview (hours a preview serves on its own host before it expires), ' +
    'previews_per_account per account (previews serving at once; when one more goes up, the oldest expire), ' +
    'stored_bytes per account (bytes of uploaded archives and build artifacts kept; past them each new deployment ' +
    'removes the oldest that no retained release uses), ' +
    'kept_file_bytes per account (bytes of the files manifest uploads keep; past them the least recently used ' +
    'go), kept_file_days per file (days a kept file stays after the last manifest or upload that used it) and ' +
    'upload_manifests_per_hour per account (manifests sent in any hour; past it 429 rate_limited).',
  properties: Object.fromEntries(limitKeys.map((k) => [k, count])),
} as const;

const Plan = {
  type: 'object',
  required: ['id', 'name', 'price_cents', 'visibilities', 'capabilities', 'limits'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    price_cents: { type: 'integer', description: 'Monthly price in US cents.' },
    visibilities: { type: 'array', items: { type: 'string' }, description: 'Project visibilities the plan allows.' },
    capabilities: {
      type: 'array',
      items: { type: 'string' },
      description: 'Features the plan allows: instant_rollback (promote an earlier release).',
    },
    limits: Limits,
  },
} as const;

const Entitlements = {
  type: 'object',
  required: ['plan', 'limits', 'usage', 'capabilities'],
  properties: {
    plan: { type: 'string' },
    limits: Limits,
    usage: {
      type: 'object',
      required: ['projects', 'private_projects', 'deployments_per_day', 'customer_subdomains', 'concurrent_builds'],
      description:
        'Current account-wide usage. null where the service does not count it yet; per-project limits ' +
        '(access grants, environment variables) and archive size are checked on the project or upload itself.',
      properties: {
        projects: count,
        private_projects: count,
        deployments_per_day: count,
        customer_subdomains: count,
        concurrent_builds: count,
      },
    },
    capabilities: {
      type: 'object',
      required: [
        'visibilities',
        'private_projects',
        'access_grants',
        'environment_variables',
        'customer_subdomains',
        'instant_rollback',
      ],
      description: 'What the plan allows at all.',
      properties: {
        visibilities: { type: 'array', items: { type: 'string' } },
        private_projects: { type: 'boolean' },
        access_grants: { type: 'boolean' },
        environment_variables: { type: 'boolean' },
        customer_subdomains: { type: 'boolean' },
        instant_rollback: {
          type: 'boolean',
          description: 'Promoting an earlier release (POST /projects/{projectID}/releases/{releaseID}/promote).',
        },
      },
    },
  },
} as const;

const Subscription = {
  type: 'object',
  required: ['plan', 'plan_name', 'price_cents', 'subscription_status', 'billing_category'],
  properties: {
    plan: { type: 'string' },
    plan_name: { type: 'string' },
    price_cents: { type: 'integer', description: 'Monthly price in US cents.' },
    subscription_status: { type: 'string', description: 'active, past_due or canceled.' },
    billing_category: { type: 'string', description: 'individual or business.' },
  },
} as const;

/** Account and billing: entitlements, plans and the subscription of the authenticated account. */
const billing: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const entitlements = kernel.get<EntitlementService>(ENTITLEMENT_SERVICE);
  const service = kernel.get<BillingService>(BILLING_SERVICE);
  app.addHook('onRequest', app.authenticate);

  app.get(
    '/billing/entitlements',
    {
      schema: {
        tags: ['Account and billing'],
        summary: 'Plan limits, usage and allowed capabilities',
        description:
          'A request beyond these limits is refused with 403 plan_restricted carrying ' +
          'feature, plan, required_plan, limit and usage.',
        security: bearer,
        response: { 200: Entitlements, ...errorResponses(401) },
      },
    },
    async (req) => entitlements.entitlements(principalOf(req).accountId),
  );

  app.get(
    '/billing/plans',
    {
      schema: {
        tags: ['Account and billing'],
        summary: 'The plans and their limits',
        description: 'Every plan, cheapest first.',
        security: bearer,
        response: {
          200: { type: 'object', required: ['plans'], properties: { plans: { type: 'array', items: Plan } } },
          ...errorResponses(401),
        },
      },
    },
    async () => ({ plans: Object.values(plans).sort((a, b) => a.price_cents - b.price_cents) }),
  );

  app.get(
    '/billing/subscription',
    {
      schema: {
        tags: ['Account and billing'],
        summary: "The account's subscription",
        description: 'Plan, subscription state and billing category of the authenticated account.',
        security: bearer,
        response: { 200: Subscription, ...errorResponses(401) },
      },
    },
    async (req) => service.subscription(principalOf(req).accountId),
  );
};

export default billing;
