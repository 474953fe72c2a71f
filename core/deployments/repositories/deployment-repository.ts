import type { EntityManager } from '@mikro-orm/core';
import { insertRow, updateRows } from '../../entities/plain-sql.js';
import { Deployment, type ReleaseTarget } from '../../entities/deployment.js';
import { Project } from '../../entities/project.js';
import { OrmRepository } from './orm-repository.js';

/** A release about to be prepared. */
export type NewDeployment = Pick<Deployment, 'accountId' | 'projectId' | 'versionId' | 'buildId' | 'operationId'> &
  Partial<Pick<Deployment, 'preview'>>;

/** The deployment records the Deploy stage writes, and the project's route to its live one. */
export interface DeploymentRepository {
  /** Records a new deployment, `running` until it goes live; returns its id. */
  create(deployment: NewDeployment): Promise<string>;
  /** The ids of the operation's deployments still `running` (prepared, never live). */
  running(operationId: string): Promise<string[]>;
  /** Ends a deployment that never went live as canceled. */
  cancel(id: string): Promise<void>;
  /**
   * Makes deployment `id` the live release of its project at `target`, with the URL `urlOf` gives
   * for the project's slug, and supersedes the one live before. Returns the one live before, or null.
   */
  goLive(id: string, projectId: string, target: ReleaseTarget, urlOf: (slug: string) => string): Promise<string | null>;
  /** Puts preview `id` up at `target` on its own `url` (status `preview`) until `ttlMs` from now; live stays. */
  goPreview(id: string, target: ReleaseTarget, url: string, ttlMs: number): Promise<void>;
  /** The deployment `id`, or null. */
  find(id: string): Promise<Deployment | null>;
  /**
   * Marks the project's superseded releases beyond the newest `keep` (by the time they went live) as pruned,
   * and returns their ids; the caller removes what the deployer kept of them.
   */
  prune(projectId: string, keep: number): Promise<string[]>;
  /**
   * Ends the account's serving previews beyond the newest `keep` (by the time they went up) as expired, and returns
   * them; the caller tells the edges and removes their releases. A preview of a project whose chain other than
   * `operationId` runs (a promote may be taking it live) is skipped.
   */
  expireBeyond(accountId: string, keep: number, operationId: string): Promise<Pick<Deployment, 'id' | 'projectId'>[]>;
  /** Where the repository reads (for the release spec of a deployment). */
  manager(): EntityManager;
  /** The same repository writing in `tx` (a stage's success transaction). */
  within(tx: EntityManager): DeploymentRepository;
}

/** DeploymentRepository on the ORM. */
export class OrmDeploymentRepository extends OrmRepository implements DeploymentRepository {
  async create(fields: NewDeployment): Promise<string> {
    const deployment = Object.assign(new Deployment(), { ...fields, createdAt: this.clock.now() });
    await insertRow(this.db, Deployment, deployment);
    return deployment.id;
  }

  async running(operationId: string): Promise<string[]> {
    const found = await this.rows<{ id: string }>('select id from deployments where operation_id = ? and status = ?', [
      operationId,
      'running',
    ]);
    return found.map((d) => d.id);
  }

  async cancel(id: string): Promise<void> {
    await this.db.nativeUpdate(Deployment, { id }, { status: 'canceled', endedAt: this.clock.now() });
  }

  async goLive(
    id: string,
    projectId: string,
    target: ReleaseTarget,
    urlOf: (slug: string) => string,
  ): Promise<string | null> {
    const db = this.db;
    const now = this.clock.now();
    const [project] = await this.rows<{ slug: string; live_deployment_id: string | null }>(
      'select slug, live_deployment_id from projects where id = ?',
      [projectId],
    );
    if (!project) throw new Error(`project ${projectId} not found`);
    const previous = project.live_deployment_id;
    // A promoted release goes live again: its end is cleared; a promoted preview is a production release now.
    await updateRows(
      db,
      Deployment,
      { id },
      { status: 'live', target, url: urlOf(project.slug), liveAt: now, endedAt: null, preview: false, expiresAt: null },
    );
    if (previous) await updateRows(db, Deployment, { id: previous }, { status: 'superseded', endedAt: now });
    await updateRows(db, Project, { id: projectId }, { liveDeploymentId: id });
    return previous;
  }

  async goPreview(id: string, target: ReleaseTarget, url: string, ttlMs: number): Promise<void> {
    const now = this.clock.now();
    await this.db.nativeUpdate(
      Deployment,
      { id },
      { status: 'preview', target, url, liveAt: now, expiresAt: new Date(now.getTime() + ttlMs) },
    );
  }

  async find(id: string): Promise<Deployment | null> {
    return this.db.findOne(Deployment, { id });
  }

  async prune(projectId: string, keep: number): Promise<string[]> {
    const db = this.db;
    const kept = await db.find(
      Deployment,
      { projectId, status: 'superseded', prunedAt: null },
      { orderBy: { liveAt: 'desc', id: 'desc' }, offset: Math.max(0, keep), fields: ['id'] },
    );
    const ids = kept.map((d) => d.id);
    if (ids.length)
      await db.nativeUpdate(Deployment, { id: { $in: ids }, prunedAt: null }, { prunedAt: this.clock.now() });
    return ids;
  }

  async expireBeyond(
    accountId: string,
    keep: number,
    operationId: string,
  ): Promise<Pick<Deployment, 'id' | 'projectId'>[]> {
    const db = this.db;
    const now = this.clock.now();
    const beyond = await db.find(
      Deployment,
      { accountId, status: 'preview', expiresAt: { $gt: now } },
      { orderBy: { liveAt: 'desc', id: 'desc' }, offset: Math.max(0, keep), fields: ['id', 'projectId'] },
    );
    const expired: Pick<Deployment, 'id' | 'projectId'>[] = [];
    for (const { id, projectId } of beyond) {
      const busy = await db.count(Project, {
        id: projectId,
        activeOperationId: { $ne: null, $nin: [operationId] },
      });
      // Compare-and-set: of two deploys trimming at once, one ends it.
      if (!busy && (await db.nativeUpdate(Deployment, { id, status: 'preview' }, { status: 'expired', endedAt: now })))
        expired.push({ id, projectId });
    }
    return expired;
  }

  manager(): EntityManager {
    return this.db;
  }

  within(tx: EntityManager): DeploymentRepository {
    return new OrmDeploymentRepository(this.em, this.clock, tx);
  }
}
