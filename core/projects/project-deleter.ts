import type { EntityManager } from '@mikro-orm/core';
import { BuildLogChunk } from '../entities/build-log-chunk.js';
import { Build } from '../entities/build.js';
import { Deployment } from '../entities/deployment.js';
import { Domain } from '../entities/domain.js';
import { CHAIN_KINDS, Operation } from '../entities/operation.js';
import { Project } from '../entities/project.js';
import { deleteAccessOf } from '../access/access-grant-service.js';
import { deleteEnvironmentOf } from '../environment/delete-environment.js';
import { deleteUsageOf } from '../usage/usage-service.js';
import { deleteDeployHooksOf } from '../deployments/deploy-hooks.js';
import { deleteWebhooksOf } from '../webhooks/webhook-service.js';
import { Version } from '../entities/version.js';
import { routesChanged } from '../deployments/host-routes.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import type { Clock } from '../ports/clock.js';
import type { Deployer } from '../ports/deployer.js';
import type { Storage } from '../ports/storage.js';
import { token } from '../tokens.js';

export const PROJECT_DELETER = token<ProjectDeleter>('hoist.ProjectDeleter');

const UNFINISHED = ['queued', 'running'];

/** Days the operation of a finished project deletion is kept: nothing else refers to it once its project is gone. */
export const DELETION_RECORD_DAYS = 30;

/**
 * Deletes the `delete_project` operations that finished more than DELETION_RECORD_DAYS before `now` (a project made
 * and deleted in a loop would leave one each for good); resolves how many went.
 */
export async function purgeFinishedDeletions(em: EntityManager, now: Date): Promise<number> {
  const before = new Date(now.getTime() - DELETION_RECORD_DAYS * 24 * 3600 * 1000);
  return em.fork().nativeDelete(Operation, { kind: 'delete_project', finishedAt: { $lt: before } });
}
/** Ids per query (far below SQLite's and PostgreSQL's bound on parameters). */
const BATCH = 500;

/**
 * Finishes project deletions queued by ProjectService.requestDeletion. Idempotent: running an
 * operation twice, or from two processes, ends in the same state.
 */
export class ProjectDeleter {
  constructor(
    private readonly em: EntityManager,
    private readonly deployer: Deployer,
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly changes?: ChangeFeed,
  ) {}

  /**
   * Tears the project of a `delete_project` operation down and marks the operation succeeded
   * (progress 100). Does nothing for an unknown or already finished operation.
   */
  async run(operationId: string): Promise<void> {
    const em = this.em.fork();
    const op = await em.findOne(Operation, { id: operationId, kind: 'delete_project', status: { $in: UNFINISHED } });
    if (!op) return;
    const projectId = op.projectId;
    // Content-addressed: another project's build may have made the same, so each goes once no build row holds it.
    let artifacts: string[] = [];
    if (projectId) {
      // Every release goes, whatever its deployment's status (remove is idempotent): a crashed one keeps its stopped
      // container or files, and its environment, until removed. Uploads and logs go.
      for (const d of await em.find(Deployment, { projectId }, { fields: ['id'] })) await this.deployer.remove(d.id);
      for (const v of await em.find(Version, { projectId })) await this.storage.delete(v.archiveKey);
      for (const b of await em.find(Build, { projectId, logKey: { $ne: null } })) await this.storage.delete(b.logKey!);
      const built = await em.find(Build, { projectId, artifactKey: { $ne: null } }, { fields: ['artifactKey'] });
      artifacts = [...new Set(built.map((b) => b.artifactKey!))];
    }
    await em.transactional(async (tx) => {
      if (projectId) {
        await tx.nativeDelete(Deployment, { projectId });
        // Log lines go by operation: a build record that is gone (or never written) leaves none behind.
        const ops = await tx.find(Operation, { projectId, kind: { $in: CHAIN_KINDS } }, { fields: ['id'] });
        for (let i = 0; i < ops.length; i += BATCH)
          await tx.nativeDelete(BuildLogChunk, { operationId: { $in: ops.slice(i, i + BATCH).map((o) => o.id) } });
        await tx.nativeDelete(Build, { projectId });
        await tx.nativeDelete(Version, { projectId });
        await deleteAccessOf(tx, projectId);
        await deleteDeployHooksOf(tx, projectId);
        await deleteWebhooksOf(tx, projectId);
        await deleteEnvironmentOf(tx, projectId);
        await deleteUsageOf(tx, projectId);
        await tx.nativeDelete(Domain, { projectId });
        await tx.nativeDelete(Operation, { projectId, kind: { $in: CHAIN_KINDS } });
        await tx.nativeDelete(Project, { id: projectId, status: 'deleting' });
      }
      const now = this.clock.now();
      await tx.nativeUpdate(
        Operation,
        { id: op.id, status: { $in: UNFINISHED } },
        { status: 'succeeded', progress: 100, finishedAt: now, updatedAt: now },
      );
    });
    // Each is tried even when one fails (the first failure is thrown once all were tried, for the caller to log). A
    // build storing the same bytes at this very moment may find them gone, as with FileRetention: a retry makes them.
    let failure: unknown;
    for (const key of artifacts)
      if (!(await em.count(Build, { artifactKey: key, artifactRemovedAt: null })))
        await this.storage.delete(key).catch((err) => (failure ??= err));
    // What every process keeps of the project (its operations' views) goes with it.
    if (projectId) await routesChanged(this.changes, projectId);
    if (failure) throw failure;
  }

  /** Finishes every unfinished deletion, oldest first (after a restart); returns how many it ran. */
  async finishUnfinished(): Promise<number> {
    const ops = await this.em
      .fork()
      .find(Operation, { kind: 'delete_project', status: { $in: UNFINISHED } }, { orderBy: { createdAt: 'asc' } });
    for (const op of ops) await this.run(op.id);
    return ops.length;
  }
}
