import type { EntityManager } from '@mikro-orm/core';
import { Deployment } from '../entities/deployment.js';
import { Operation } from '../entities/operation.js';
import { Project } from '../entities/project.js';
import { Version } from '../entities/version.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import type { Clock } from '../ports/clock.js';
import type { Deployer } from '../ports/deployer.js';
import { token, type Logger } from '../tokens.js';
import { routesChanged } from './host-routes.js';

/** A preview that serves: the operation that put it up and the version it came from. */
export interface ServingPreview {
  operation: Operation;
  version: Version;
}

/**
 * Previews: releases on their own hosts (`<slug>--<short id>`) beside the live one. The Deploy stage puts
 * them up, the routing table serves them until they expire, and `expire` takes them down.
 */
export class Previews {
  constructor(
    private readonly em: EntityManager,
    private readonly deployer: Deployer,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly changes?: ChangeFeed,
  ) {}

  /** The preview of project `projectId` that still serves the archive of SHA-256 `sha256`, or null. */
  async serving(projectId: string, sha256: string): Promise<ServingPreview | null> {
    const em = this.em.fork();
    const versions = await em.find(Version, { projectId, archiveSha256: sha256 });
    if (!versions.length) return null;
    const preview = await em.findOne(
      Deployment,
      {
        projectId,
        versionId: { $in: versions.map((v) => v.id) },
        status: 'preview',
        expiresAt: { $gt: this.clock.now() },
      },
      { orderBy: { liveAt: 'desc' } },
    );
    if (!preview) return null;
    const operation = await em.findOne(Operation, { id: preview.operationId });
    return operation && { operation, version: versions.find((v) => v.id === preview.versionId)! };
  }

  /**
   * Takes down every preview whose time is up: marks it expired, tells every edge (which stopped serving it at
   * its expiry already) and removes its release. A preview whose project runs a chain (a promote may be taking
   * it live) waits for the next round. Returns how many expired.
   */
  async expire(): Promise<number> {
    const em = this.em.fork();
    const now = this.clock.now();
    const due = await em.find(
      Deployment,
      { status: 'preview', expiresAt: { $lte: now } },
      { fields: ['id', 'projectId'], disableIdentityMap: true },
    );
    let expired = 0;
    for (const d of due) {
      if (await em.count(Project, { id: d.projectId, activeOperationId: { $ne: null } })) continue;
      // Compare-and-set: of two workers, one takes it down.
      if (!(await em.nativeUpdate(Deployment, { id: d.id, status: 'preview' }, { status: 'expired', endedAt: now })))
        continue;
      expired++;
      await routesChanged(this.changes, d.projectId, this.log);
      await this.deployer
        .remove(d.id)
        .catch((err) => this.log.warn({ err, deploymentId: d.id }, 'an expired preview was not removed'));
    }
    return expired;
  }
}

export const PREVIEWS = token<Previews>('hoist.Previews');
