import type { EntityManager } from '@mikro-orm/core';
import { Account } from '../entities/account.js';
import { Domain } from '../entities/domain.js';
import { Project } from '../entities/project.js';
import { planRestricted } from '../errors.js';
import { plans, type Capability, type Plan, type PlanLimits } from './plans.js';
import { token } from '../tokens.js';
import { queryRows } from '../entities/plain-sql.js';

export const ENTITLEMENT_SERVICE = token<EntitlementService>('hoist.EntitlementService');

/** A limited feature: a key of PlanLimits (`projects`, `deployments_per_day`, `archive_bytes`, ...). */
export type LimitedFeature = keyof PlanLimits;

/**
 * Account-wide usage the service can count today. Features that do not exist yet, and per-project
 * limits (access grants, environment variables, archive size), are null here; their owners count
 * them where they enforce them.
 */
export interface Usage {
  projects: number;
  private_projects: number;
  deployments_per_day: number | null;
  customer_subdomains: number | null;
  concurrent_builds: number | null;
}

/** What the entitlements call answers: the plan, its limits, current usage and allowed capabilities. */
export interface Entitlements {
  plan: string;
  limits: PlanLimits;
  usage: Usage;
  capabilities: {
    visibilities: string[];
    private_projects: boolean;
    access_grants: boolean;
    environment_variables: boolean;
    customer_subdomains: boolean;
    /** Promote an earlier release (instant rollback): POST .../releases/{releaseID}/promote. */
    instant_rollback: boolean;
  };
}

const byPrice = () => Object.values(plans).sort((a, b) => a.price_cents - b.price_cents);
const allows = (limit: number | null, amount: number) => limit === null || amount <= limit;
const allowed = (limit: number | null) => limit === null || limit > 0;

/** The cheapest plan for which `ok` holds, or null when none does. */
function cheapest(ok: (plan: Plan) => boolean): string | null {
  return byPrice().find(ok)?.id ?? null;
}

/** assertWithin on a plan already read (planOf): for a caller checking several limits at once. */
export function assertPlanAllows(plan: Plan, feature: LimitedFeature, usage: number, increment = 1): void {
  const limit = plan.limits[feature];
  const wanted = usage + increment;
  if (allows(limit, wanted)) return;
  throw planRestricted(`The ${plan.name} plan allows ${limit} for ${feature}; this would make ${wanted}`, {
    feature,
    plan: plan.id,
    required_plan: cheapest((p) => allows(p.limits[feature], wanted)),
    limit,
    usage,
  });
}

/**
 * The one place plan limits are read and enforced. Every feature that is limited by the plan calls
 * `assertWithin` (or `assertVisibility`) before it writes; a refusal is a `plan_restricted` error
 * (HTTP 403) carrying feature, plan, required_plan, limit and usage.
 */
export class EntitlementService {
  constructor(private readonly em: EntityManager) {}

  /**
   * The plan of the account (the free plan when the account names an unknown one). A plain query of the one
   * column: every upload and every deploy asks, and an entity load cost several times as much (bench/orm-reads.ts).
   */
  async planOf(accountId: string): Promise<Plan> {
    const [account] = await queryRows<Pick<Account, 'plan'>>(
      this.em,
      'select plan from accounts where id = ? limit 1',
      [accountId],
    );
    if (!account) throw new Error(`Account ${accountId} not found`);
    return plans[account.plan] ?? plans.free;
  }

  /**
   * Throws plan_restricted unless `usage + increment` stays within the plan's limit for `feature`.
   * Counters pass the current count and the amount to add (`assertWithin(a, 'projects', 3, 1)`);
   * a size check passes the size as `usage` and 0 as `increment` (`assertWithin(a, 'archive_bytes', size, 0)`).
   * The error's `usage` is the `usage` given.
   */
  async assertWithin(accountId: string, feature: LimitedFeature, usage: number, increment = 1): Promise<void> {
    assertPlanAllows(await this.planOf(accountId), feature, usage, increment);
  }

  /** Throws plan_restricted (feature `visibility:<value>`) unless the plan allows projects of `visibility`. */
  async assertVisibility(accountId: string, visibility: string): Promise<void> {
    const plan = await this.planOf(accountId);
    if (plan.visibilities.includes(visibility)) return;
    throw planRestricted(`Visibility ${visibility} is not available on the ${plan.name} plan`, {
      feature: `visibility:${visibility}`,
      plan: plan.id,
      required_plan: cheapest((p) => p.visibilities.includes(visibility)),
      limit: null,
      usage: null,
    });
  }

  /** Throws plan_restricted (feature `capability`) unless the account's plan allows `capability`. */
  async assertCapability(accountId: string, capability: Capability): Promise<void> {
    const plan = await this.planOf(accountId);
    if (plan.capabilities.includes(capability)) return;
    throw planRestricted(`${capability} is not available on the ${plan.name} plan`, {
      feature: capability,
      plan: plan.id,
      required_plan: cheapest((p) => p.capabilities.includes(capability)),
      limit: null,
      usage: null,
    });
  }

  /** The account's usage of what can be counted account-wide today (see Usage). */
  async usage(accountId: string): Promise<Usage> {
    const projects = await this.em.count(Project, { accountId, status: 'active' });
    const privateProjects = await this.em.count(Project, { accountId, status: 'active', visibility: 'private' });
    const domains = await this.em.count(Domain, { accountId });
    return {
      projects,
      private_projects: privateProjects,
      deployments_per_day: null,
      customer_subdomains: domains,
      concurrent_builds: null,
    };
  }

  /** The plan, its limits, the account's usage and the capabilities the plan allows. */
  async entitlements(accountId: string): Promise<Entitlements> {
    const plan = await this.planOf(accountId);
    const usage = await this.usage(accountId);
    const l = plan.limits;
    return {
      plan: plan.id,
      limits: { ...l },
      usage,
      capabilities: {
        visibilities: [...plan.visibilities],
        private_projects: plan.visibilities.includes('private') && allowed(l.private_projects),
        access_grants: allowed(l.access_grants_per_project),
        environment_variables: allowed(l.environment_variables_per_project),
        customer_subdomains: allowed(l.customer_subdomains),
        instant_rollback: plan.capabilities.includes('instant_rollback'),
      },
    };
  }
}
