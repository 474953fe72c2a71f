import { RECORDS_SERVICE } from '../../core/deployments/records-service.js';
import { DEPLOYER, type ReleaseLogLine } from '../../core/ports/deployer.js';
import type { Kernel } from '../kernel.js';

/** A deployment's runtime log as the logs route and the get_logs tool answer it. */
export interface RuntimeLog {
  deployment_id: string;
  /** False (no lines) when nothing is kept: a static release, one removed or never started. */
  kept: boolean;
  lines: ReleaseLogLine[];
}

/**
 * The last `lines` lines the Node.js app of deployment `deploymentId` printed. Throws not_found for a deployment that
 * is not of this account's project `projectId` (or a malformed id).
 */
export async function runtimeLog(
  kernel: Kernel,
  accountId: string,
  projectId: string,
  deploymentId: string,
  lines: number,
): Promise<RuntimeLog> {
  await kernel.get(RECORDS_SERVICE).deployment(accountId, projectId, deploymentId);
  const kept = (await kernel.get(DEPLOYER).logs?.(deploymentId, lines)) ?? null;
  return { deployment_id: deploymentId, kept: kept !== null, lines: kept ?? [] };
}
