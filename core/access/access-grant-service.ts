import type { EntityManager } from '@mikro-orm/core';
import { isEmail } from '../accounts/account-service.js';
import { normalizeEmail } from '../auth/auth-service.js';
import type { EntitlementService } from '../billing/entitlement-service.js';
import { AccessCode } from '../entities/access-code.js';
import { AccessGrant } from '../entities/access-grant.js';
import { Project } from '../entities/project.js';
import { underOwnerLock } from '../billing/owner-lock.js';
import { conflict, invalid, notFound } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import { isUuid } from '../projects/keyset-cursor.js';
import type { ProjectService } from '../projects/project-service.js';
import { token } from '../tokens.js';

export const ACCESS_GRANT_SERVICE = token<AccessGrantService>('hoist.AccessGrantService');

/** What an add answers: the grant, and whether this call created it. */
export interface AddedGrant {
  grant: AccessGrant;
  created: boolean;
}

/**
 * The e-mail addresses granted access to a private project's site. Grants are added only while the
 * project is private; a project made draft or public keeps its grants, unused, until it is private
 * again, and they can be listed and removed whatever the visibility.
 */
export class AccessGrantService {
  constructor(
    private readonly em: EntityManager,
    private readonly projects: ProjectService,
    private readonly entitlements: EntitlementService,
    private readonly clock: Clock,
  ) {}

  /** The grants of the account's project, oldest first, whatever its visibility; `inEffect` while it is private. */
  async list(accountId: string, projectId: string): Promise<{ grants: AccessGrant[]; inEffect: boolean }> {
    const project = await this.projects.get(accountId, projectId);
    const grants = await this.em.find(
      AccessGrant,
      { projectId: project.id },
      { orderBy: { createdAt: 'asc', id: 'asc' } },
    );
    return { grants, inEffect: project.visibility === 'private' };
  }

  /**
   * Grants `email` (trimmed, lower-cased) access; an address already granted answers its grant
   * with `created: false`. Beyond the plan's access_grants_per_project → plan_restricted.
   */
  async add(accountId: string, projectId: string, email: string): Promise<AddedGrant> {
    const address = typeof email === 'string' ? normalizeEmail(email) : '';
    if (!isEmail(address)) throw invalid(`Not a valid e-mail address: ${String(email)}`, { field: 'email' });
    const project = await this.privateProject(accountId, projectId);
    // Under the project's lock: concurrent adds cannot pass the plan's count together.
    const added = await underOwnerLock(this.em, Project, project.id, async (tx) => {
      const known = await tx.findOne(AccessGrant, { projectId: project.id, email: address });
      if (known) return { grant: known, created: false };
      await this.entitlements.assertWithin(
        accountId,
        'access_grants_per_project',
        await tx.count(AccessGrant, { projectId: project.id }),
      );
      const grant = Object.assign(new AccessGrant(), {
        projectId: project.id,
        email: address,
        createdAt: this.clock.now(),
      });
      await tx.insert(grant);
      return { grant, created: true };
    });
    if (added.created) await this.projects.routesChanged(project.id);
    return added;
  }

  /**
   * Removes a grant, named by id or by e-mail address, with its pending codes; its visitors are out
   * at their next request. Whatever the visibility: a kept grant can go before the project is private again.
   */
  async remove(accountId: string, projectId: string, grantIdOrEmail: string): Promise<void> {
    const project = await this.projects.get(accountId, projectId);
    const where = isUuid(grantIdOrEmail) ? { id: grantIdOrEmail } : { email: normalizeEmail(grantIdOrEmail) };
    const grant = await this.em.findOne(AccessGrant, { projectId: project.id, ...where });
    if (!grant) throw notFound('Access grant');
    await this.em.transactional(async (tx) => {
      await tx.nativeDelete(AccessCode, { grantId: grant.id });
      await tx.nativeDelete(AccessGrant, { id: grant.id });
    });
    // The edges shut its visitors out at their next request.
    await this.projects.routesChanged(grant.projectId);
  }

  private async privateProject(accountId: string, projectId: string): Promise<Project> {
    const project = await this.projects.get(accountId, projectId);
    if (project.visibility !== 'private') {
      throw conflict(
        `Access grants exist only for private projects; this project is ` +
          `${project.visibility}. Make it private first (PATCH ` +
          `/api/v1/projects/${project.id}/ with {"visibility": "private"}).`,
        {
          visibility: project.visibility,
        },
      );
    }
    return project;
  }
}

/** Deletes every grant and code of a project (its deletion). */
export async function deleteAccessOf(em: EntityManager, projectId: string): Promise<void> {
  await em.nativeDelete(AccessCode, { projectId });
  await em.nativeDelete(AccessGrant, { projectId });
}
