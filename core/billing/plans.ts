/** Numeric limits of a plan; null means unlimited. */
export interface PlanLimits {
  projects: number | null;
  deployments_per_day: number | null;
  archive_bytes: number;
  private_projects: number | null;
  access_grants_per_project: number | null;
  environment_variables_per_project: number | null;
  environment_value_bytes: number;
  customer_subdomains: number | null;
  concurrent_builds: number;
  /** Releases kept per project, the live one included; older ones are pruned after each deploy or promote. */
  release_retention: number;
  /** Hours a preview serves after it went up; then it expires and its release is removed. */
  preview_ttl_hours: number;
  /**
   * Previews the account's projects serve at once (each may run an app); when one more goes up, the oldest beyond it
   * expire.
   */
  previews_per_account: number;
  /**
   * Bytes of uploaded archives and build artifacts the account keeps in Storage; past them, with each new deployment,
   * the oldest no retained release or unfinished operation uses are removed.
   */
  stored_bytes: number;
  /** Bytes of manifest-upload files kept for the account; past them the least recently used go, or are not kept. */
  kept_file_bytes: number;
  /** Days a kept manifest-upload file stays after the last manifest or upload that used it. */
  kept_file_days: number;
  /** Upload manifests the account may send in any hour (a sliding window); past it 429 rate_limited. */
  upload_manifests_per_hour: number;
  /** Webhooks a project may have (URLs its deployment events are posted to). */
  webhooks_per_project: number;
  /** Deploy hooks a project may have (secret URLs that build its live version again). */
  deploy_hooks_per_project: number;
  /** People in the account (its owners included), invited ones too. */
  members_per_account: number;
}

export interface Plan {
  id: string;
  name: string;
  /** Monthly price in US cents, shown by the plans call. */
  price_cents: number;
  limits: PlanLimits;
  /** Visibilities a project of this plan may take. */
  visibilities: string[];
  /** Features the plan allows beyond its limits: `instant_rollback` (promote an earlier release). */
  capabilities: Capability[];
}

/** A feature a plan allows or not. */
export type Capability = 'instant_rollback';

/** The plans, cheapest first; `required_plan` in a restriction is the first one that allows it. */
export const plans: Record<string, Plan> = {
  free: {
    id: 'free',
    name: 'Free',
    price_cents: 0,
    visibilities: ['draft', 'public'],
    capabilities: [],
    limits: {
      projects: 3,
      deployments_per_day: 50,
      archive_bytes: 50_000_000,
      private_projects: 0,
      access_grants_per_project: 0,
      environment_variables_per_project: 20,
      environment_value_bytes: 4096,
      customer_subdomains: 0,
      concurrent_builds: 1,
      release_retention: 1,
      preview_ttl_hours: 24,
      stored_bytes: 2_000_000_000,
      previews_per_account: 3,
      kept_file_bytes: 250_000_000,
      kept_file_days: 14,
      upload_manifests_per_hour: 60,
      webhooks_per_project: 2,
      deploy_hooks_per_project: 2,
      members_per_account: 1,
    },
  },
  pro: {
    id: 'pro',
    name: 'Pro',
    price_cents: 2000,
    visibilities: ['draft', 'public', 'private'],
    capabilities: ['instant_rollback'],
    limits: {
      projects: 50,
      deployments_per_day: 500,
      archive_bytes: 100_000_000,
      private_projects: 10,
      access_grants_per_project: 25,
      environment_variables_per_project: 100,
      environment_value_bytes: 32768,
      customer_subdomains: 5,
      concurrent_builds: 2,
      release_retention: 5,
      preview_ttl_hours: 168,
      stored_bytes: 50_000_000_000,
      previews_per_account: 20,
      kept_file_bytes: 2_000_000_000,
      kept_file_days: 30,
      upload_manifests_per_hour: 300,
      webhooks_per_project: 10,
      deploy_hooks_per_project: 10,
      members_per_account: 5,
    },
  },
  team: {
    id: 'team',
    name: 'Team',
    price_cents: 8000,
    visibilities: ['draft', 'public', 'private'],
    capabilities: ['instant_rollback'],
    limits: {
      projects: null,
      deployments_per_day: null,
      archive_bytes: 100_000_000,
      private_projects: null,
      access_grants_per_project: 500,
      environment_variables_per_project: 500,
      environment_value_bytes: 65536,
      customer_subdomains: 50,
      concurrent_builds: 5,
      release_retention: 20,
      preview_ttl_hours: 720,
      stored_bytes: 500_000_000_000,
      previews_per_account: 100,
      kept_file_bytes: 10_000_000_000,
      kept_file_days: 90,
      upload_manifests_per_hour: 1200,
      webhooks_per_project: 25,
      deploy_hooks_per_project: 25,
      members_per_account: 50,
    },
  },
};
