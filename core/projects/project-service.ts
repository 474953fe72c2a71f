import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import type { EntitlementService } from '../billing/entitlement-service.js';
import { deleteEnvironmentOf } from '../environment/delete-environment.js';
import { deleteDeployHooksOf } from '../deployments/deploy-hooks.js';
import { deleteWebhooksOf } from '../webhooks/webhook-service.js';
import { Account } from '../entities/account.js';
import { Operation } from '../entities/operation.js';
import { underOwnerLock } from '../billing/owner-lock.js';
import { Project } from '../entities/project.js';
import { HoistError, invalid, notFound } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import { routesChanged } from '../deployments/host-routes.js';
import type { PasswordHasher } from '../ports/password-hasher.js';
import { applyBuildSettings, validateBuildSettings } from './build-settings.js';
import { decodeCursor, encodeCursor, isUuid } from './keyset-cursor.js';
import { isReservedSlug, slugify, withSuffix } from './slug.js';
import { token } from '../tokens.js';
import { loadOne } from '../entities/plain-sql.js';

export const PROJECT_SERVICE = token<ProjectService>('hoist.ProjectService');

/** Visibilities a project may take; the plan says which of them an account may use. */
export const VISIBILITIES = ['draft', 'public', 'private'] as const;
export const NAME_MAX = 100;
export const PAGE_DEFAULT = 20;
export const PAGE_MAX = 100;
/** Length bounds of a private project's access password, in characters. */
export const ACCESS_PASSWORD_MIN = 8;
export const ACCESS_PASSWORD_MAX = 200;

/** What creating a project takes; `settings` holds build settings (see BuildSettings). */
export interface NewProject {
  name: string;
  visibility?: string;
  settings?: Record<string, unknown>;
  /** The access password of the site while the project is private (stored as an argon2id hash). */
  accessPassword?: string | null;
}

/** A change to a project: absent fields stay; in `settings` null clears a key. */
export interface ProjectChange {
  name?: string;
  visibility?: string;
  settings?: Record<string, unknown>;
  /** A new access password, or null to remove it. */
  accessPassword?: string | null;
  /** Who sees the project's previews: `private` (behind its gate) or `public` (noindex). */
  previewVisibility?: string;
}

/** One page of an account's projects, newest first. */
export interface ProjectPage {
  projects: Project[];
  nextCursor: string | null;
}

// Marks the slug of a deleting project: `~` never appears in a real slug, so the name is free at once.
const tombstone = (id: string) => `~deleted-${id}`;

/** The account's projects: create, read, update, list, and queue their deletion. */
export class ProjectService {
  constructor(
    private readonly em: EntityManager,
    private readonly entitlements: EntitlementService,
    private readonly hasher: PasswordHasher,
    private readonly clock: Clock,
    /** Where a change of what the edge serves for a project is announced to every edge. */
    private readonly changes?: ChangeFeed,
  ) {}

  /**
   * Announces, after its write committed, that what the edge serves for project `id` changed
   * (visibility, status, access password or grants, customer domains).
   */
  routesChanged(id: string): Promise<void> {
    return routesChanged(this.changes, id);
  }

  /** A page of the account's active projects, newest first; `cursor` is a `nextCursor` of a previous page. */
  async list(accountId: string, opts: { cursor?: string; limit?: number } = {}): Promise<ProjectPage> {
    const limit = opts.limit ?? PAGE_DEFAULT;
    if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_MAX)
      throw invalid(`limit must be 1 to ${PAGE_MAX}`, { field: 'limit' });
    const after = opts.cursor === undefined ? null : decodeCursor(opts.cursor);
    const rows = await this.em.find(
      Project,
      {
        accountId,
        status: 'active',
        ...(after && {
          $or: [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, id: { $lt: after.id } }],
        }),
      },
      { orderBy: { createdAt: 'desc', id: 'desc' }, limit: limit + 1 },
    );
    const projects = rows.slice(0, limit);
    const last = projects[projects.length - 1];
    return { projects, nextCursor: rows.length > limit ? encodeCursor(last) : null };
  }

  /** The account's active project `id`; not_found for a missing, malformed, deleting or foreign id alike. */
  async get(accountId: string, id: string): Promise<Project> {
    // Every project route and every upload asks: a plain query (see loadOne).
    const project = isUuid(id)
      ? await loadOne(this.em, Project, { id, account_id: accountId, status: 'active' })
      : null;
    if (!project) throw notFound('Project');
    return project;
  }

  /** The account's active project called `name` (the oldest), or null. */
  async findByName(accountId: string, name: string): Promise<Project | null> {
    return this.em.fork().findOne(Project, { accountId, name, status: 'active' }, { orderBy: { createdAt: 'asc' } });
  }

  /**
   * Creates a project with a slug unique across the service (derived from the name, suffixed when
   * taken). Visibility defaults to draft; the plan's visibilities, projects and private_projects
   * limits apply.
   */
  async create(accountId: string, input: NewProject): Promise<Project> {
    const name = checkName(input.name);
    const visibility = checkVisibility(input.visibility ?? 'draft');
    const settings = applyBuildSettings({}, validateBuildSettings(input.settings ?? {}));
    const accessPasswordHash = await this.accessPasswordHash(input.accessPassword);
    await this.entitlements.assertVisibility(accountId, visibility);
    // Under the account's lock: concurrent creates cannot pass the plan's counts together.
    return underOwnerLock(this.em, Account, accountId, async (tx) => {
      await this.entitlements.assertWithin(
        accountId,
        'projects',
        await tx.count(Project, { accountId, status: 'active' }),
      );
      if (visibility === 'private') await this.assertPrivateRoom(tx, accountId);
      const base = slugify(name);
      const now = this.clock.now();
      for (let attempt = 1; ; attempt++) {
        const project = Object.assign(new Project(), {
          accountId,
          name,
          visibility,
          settings,
          accessPasswordHash: accessPasswordHash ?? null,
          slug: await this.freeSlug(tx, base),
          createdAt: now,
          updatedAt: now,
        });
        try {
          // In a savepoint: a concurrent create that took the slug does not end the transaction.
          await tx.transactional((sp) => sp.insert(project));
          return project;
        } catch (err) {
          if (!(err instanceof UniqueConstraintViolationException) || attempt >= 5) throw err;
        }
      }
    });
  }

  /**
   * Changes name, visibility, build settings, the access password and the previews' visibility; the slug (and so
   * the URL) stays.
   */
  async update(accountId: string, id: string, change: ProjectChange): Promise<Project> {
    const name = change.name === undefined ? undefined : checkName(change.name);
    const visibility = change.visibility === undefined ? undefined : checkVisibility(change.visibility);
    const settings = change.settings === undefined ? undefined : validateBuildSettings(change.settings);
    const accessPasswordHash = await this.accessPasswordHash(change.accessPassword);
    const { previewVisibility } = change;
    if (previewVisibility !== undefined && !['private', 'public'].includes(previewVisibility))
      throw invalid('preview_visibility must be private or public', { field: 'preview_visibility' });
    const project = await this.get(accountId, id);
    const changes = [name, visibility, settings, accessPasswordHash, previewVisibility];
    if (changes.every((c) => c === undefined)) return project;
    if (visibility !== undefined && visibility !== project.visibility) {
      await this.entitlements.assertVisibility(accountId, visibility);
      if (visibility === 'private') {
        await underOwnerLock(this.em, Account, accountId, async (tx) => {
          await this.assertPrivateRoom(tx, accountId);
          await tx.nativeUpdate(Project, { id: project.id }, { visibility });
        });
      }
    }
    if (name !== undefined) project.name = name;
    if (visibility !== undefined) project.visibility = visibility;
    if (settings !== undefined) project.settings = applyBuildSettings(project.settings ?? {}, settings);
    if (accessPasswordHash !== undefined) project.accessPasswordHash = accessPasswordHash;
    if (previewVisibility !== undefined) project.previewVisibility = previewVisibility;
    project.updatedAt = this.clock.now();
    await this.em.flush();
    if (visibility !== undefined || accessPasswordHash !== undefined || previewVisibility !== undefined)
      await this.routesChanged(project.id);
    return project;
  }

  /**
   * Queues the deletion of a project: in one transaction it leaves the API (status `deleting`, slug
   * freed) and a `delete_project` operation starts (running, progress 5). ProjectDeleter finishes it.
   */
  async requestDeletion(accountId: string, id: string): Promise<Operation> {
    const project = await this.get(accountId, id);
    const op = await this.queueDeletion(accountId, project);
    // The edges stop serving it at once.
    await this.routesChanged(project.id);
    return op;
  }

  private async queueDeletion(accountId: string, project: Project): Promise<Operation> {
    if (project.activeOperationId) {
      const running = await this.em.findOne(Operation, {
        id: project.activeOperationId,
        status: { $in: ['queued', 'running'] },
      });
      if (running) {
        throw new HoistError(
          'deployment_in_progress',
          'A deployment of this project is running; cancel it or wait for it to finish, then delete',
          { operation_id: running.id },
        );
      }
    }
    return this.em.transactional(async (em) => {
      const n = await em.nativeUpdate(
        Project,
        { id: project.id, accountId, status: 'active' },
        { status: 'deleting', slug: tombstone(project.id) },
      );
      if (n !== 1) throw notFound('Project');
      const now = this.clock.now();
      const op = Object.assign(new Operation(), {
        accountId,
        projectId: project.id,
        kind: 'delete_project',
        status: 'running',
        progress: 5,
        createdAt: now,
        updatedAt: now,
      });
      await em.persist(op).flush();
      return op;
    });
  }

  /**
   * Removes a project created moments ago, and its environment, while nothing has started on it (no
   * deployment chain taken, nothing live): what a refused upload that created it leaves behind.
   */
  async discardNew(id: string): Promise<void> {
    await this.em.fork().transactional(async (tx) => {
      if (await tx.nativeDelete(Project, { id, liveDeploymentId: null, activeOperationId: null }))
        await deleteDeployHooksOf(tx, id);
      await deleteWebhooksOf(tx, id);
      await deleteEnvironmentOf(tx, id);
    });
  }

  /** The hash to store for an access password given (null removes it; undefined leaves it). */
  private async accessPasswordHash(password: string | null | undefined): Promise<string | null | undefined> {
    if (password === undefined || password === null) return password;
    if (
      typeof password !== 'string' ||
      [...password].length < ACCESS_PASSWORD_MIN ||
      [...password].length > ACCESS_PASSWORD_MAX
    ) {
      throw invalid(`access_password must be ${ACCESS_PASSWORD_MIN} to ${ACCESS_PASSWORD_MAX} characters`, {
        field: 'access_password',
      });
    }
    return this.hasher.hash(password);
  }

  private async assertPrivateRoom(em: EntityManager, accountId: string): Promise<void> {
    const used = await em.count(Project, { accountId, status: 'active', visibility: 'private' });
    await this.entitlements.assertWithin(accountId, 'private_projects', used);
  }

  private async freeSlug(em: EntityManager, base: string): Promise<string> {
    let slug = base;
    for (let i = 0; i < 10; i++) {
      if (!isReservedSlug(slug) && !(await em.count(Project, { slug }))) return slug;
      slug = withSuffix(base);
    }
    return slug;
  }
}

function checkName(name: string): string {
  const trimmed = typeof name === 'string' ? name.trim() : '';
  if (trimmed.length < 1 || trimmed.length > NAME_MAX)
    throw invalid(`name must be 1 to ${NAME_MAX} characters`, { field: 'name' });
  return trimmed;
}

function checkVisibility(v: string): string {
  if (!(VISIBILITIES as readonly string[]).includes(v))
    throw invalid(`visibility must be one of ${VISIBILITIES.join(', ')}`, { field: 'visibility' });
  return v;
}
