import type { EntityManager } from '@mikro-orm/core';
import { createHash, randomBytes } from 'node:crypto';
import type { EntitlementService } from '../billing/entitlement-service.js';
import { underOwnerLock } from '../billing/owner-lock.js';
import { DeployHook } from '../entities/deploy-hook.js';
import { Deployment } from '../entities/deployment.js';
import type { Operation, StartedBy } from '../entities/operation.js';
import { insertRow, loadById, loadOne } from '../entities/plain-sql.js';
import { Project } from '../entities/project.js';
import { conflict, invalid, notFound } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import { isUuid } from '../projects/keyset-cursor.js';
import type { ProjectService } from '../projects/project-service.js';
import { token } from '../tokens.js';
import type { DeploymentService } from './deployment-service.js';

export const DEPLOY_HOOKS = token<DeployHooks>('hoist.DeployHooks');

/** A deploy hook as the API shows it: never its URL (shown once, when it is made). */
export interface DeployHookView {
  id: string;
  name: string;
  /** Who made it; null for a hook made before it was recorded. */
  created_by: StartedBy | null;
  created_at: string;
  last_triggered_at: string | null;
}

/** The longest hook name. */
export const HOOK_NAME_MAX = 100;
/** What a hook's token looks like: `dh_` and 32 random bytes in base64url. */
const TOKEN = /^dh_[A-Za-z0-9_-]{43}$/;

const hashOf = (secret: string) => createHash('sha256').update(secret).digest('hex');

const view = (h: DeployHook): DeployHookView => ({
  id: h.id,
  name: h.name,
  created_by: h.createdBy,
  created_at: h.createdAt.toISOString(),
  last_triggered_at: h.lastTriggeredAt?.toISOString() ?? null,
});

/**
 * Deploy hooks (Netlify's build hooks, Vercel's deploy hooks): secret URLs that start a new build and deploy of the
 * project's live version when anything POSTs to them, so a CMS or a scheduler can rebuild a site whose build fetches
 * content. The token is 256 random bits, kept only as its SHA-256, and shown once; the URL is the credential (no
 * account's token is involved), so a hook does what a build retry of the live version does, and nothing else.
 */
export class DeployHooks {
  constructor(
    private readonly em: EntityManager,
    private readonly projects: ProjectService,
    private readonly deployments: Pick<DeploymentService, 'rebuild'>,
    private readonly entitlements: EntitlementService,
    private readonly clock: Clock,
  ) {}

  /**
   * Makes a hook `name` on the project, recording `createdBy` (the user who makes it), under the plan's
   * deploy_hooks_per_project; resolves it with its token (the URL's last segment), shown this once. Throws
   * invalid_request, plan_restricted or not_found.
   */
  async create(
    accountId: string,
    projectId: string,
    name: unknown,
    createdBy: StartedBy,
  ): Promise<{ hook: DeployHookView; token: string }> {
    if (typeof name !== 'string' || !name.trim() || name.length > HOOK_NAME_MAX || /[\p{Cc}]/u.test(name))
      throw invalid(`name must be 1 to ${HOOK_NAME_MAX} characters without control characters`, { field: 'name' });
    const project = await this.projects.get(accountId, projectId);
    const secret = `dh_${randomBytes(32).toString('base64url')}`;
    const hook = Object.assign(new DeployHook(), {
      accountId,
      projectId: project.id,
      name: name.trim(),
      tokenHash: hashOf(secret),
      createdBy: { user_id: createdBy.user_id, email: createdBy.email },
      createdAt: this.clock.now(),
    });
    await underOwnerLock(this.em, Project, project.id, async (tx) => {
      const count = await tx.count(DeployHook, { projectId: project.id });
      await this.entitlements.assertWithin(accountId, 'deploy_hooks_per_project', count);
      await insertRow(tx, DeployHook, hook);
    });
    return { hook: view(hook), token: secret };
  }

  /** The project's hooks, oldest first. */
  async list(accountId: string, projectId: string): Promise<DeployHookView[]> {
    const project = await this.projects.get(accountId, projectId);
    const hooks = await this.em.fork().find(DeployHook, { projectId: project.id }, { orderBy: { createdAt: 'asc' } });
    return hooks.map(view);
  }

  /** Removes a hook: its URL stops working at once. not_found when the project has no such hook. */
  async remove(accountId: string, projectId: string, hookId: string): Promise<void> {
    const project = await this.projects.get(accountId, projectId);
    const n = isUuid(hookId) ? await this.em.fork().nativeDelete(DeployHook, { id: hookId, projectId: project.id }) : 0;
    if (n === 0) throw notFound('Deploy hook');
  }

  /**
   * Starts a build and deploy of the live version of the hook's project, as a build retry does (source deploy_hook,
   * no user). Throws not_found for a token no hook has (or a project being deleted), conflict when the project has no
   * live release yet, and what DeploymentService.rebuild throws (deployment_in_progress, plan_restricted,
   * not_retryable).
   */
  async trigger(secret: string): Promise<{ project: Project; operation: Operation }> {
    const em = this.em.fork();
    const hook = TOKEN.test(secret) ? await loadOne(em, DeployHook, { token_hash: hashOf(secret) }) : null;
    const project = hook && (await loadOne(em, Project, { id: hook.projectId, status: 'active' }));
    if (!hook || !project) throw notFound('Deploy hook');
    const live = project.liveDeploymentId && (await loadById(em, Deployment, project.liveDeploymentId));
    if (!live)
      throw conflict('The project has no live release to build again; deploy it first', { project_id: project.id });
    // To production, whatever the live version was uploaded as (a promoted preview's version says preview).
    const operation = await this.deployments.rebuild(hook.accountId, live.versionId, undefined, {
      source: 'deploy_hook',
      production: true,
    });
    await em.nativeUpdate(DeployHook, { id: hook.id }, { lastTriggeredAt: this.clock.now() });
    return { project, operation };
  }
}

/** Deletes a project's deploy hooks: their URLs stop working. */
export async function deleteDeployHooksOf(em: EntityManager, projectId: string): Promise<void> {
  await em.nativeDelete(DeployHook, { projectId });
}
