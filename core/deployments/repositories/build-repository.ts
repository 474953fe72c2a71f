import type { EntityManager } from '@mikro-orm/core';
import { Build } from '../../entities/build.js';
import { insertRow } from '../../entities/plain-sql.js';
import { OrmRepository } from './orm-repository.js';

/** What a build's record takes as it goes; `finished` stamps its end. */
export type BuildUpdate = Partial<
  Pick<Build, 'status' | 'artifactKey' | 'artifactRoot' | 'artifactSha256' | 'artifactSize' | 'log' | 'error'>
> & { finished?: boolean };

/**
 * A build about to run (or, `skipped`, packed without running anything), or one done already (`succeeded`: it ran
 * nothing, inline), with what it has so far.
 */
export type NewBuild = Pick<Build, 'accountId' | 'projectId' | 'versionId' | 'operationId' | 'logKey'> &
  Omit<BuildUpdate, 'status'> & { status: 'running' | 'skipped' | 'succeeded' };

/** A build Deploy can ship: one with an artifact. */
export type ShippableBuild = Pick<Build, 'id' | 'artifactRoot'> & { artifactKey: string };

/** The build records the stages write. */
export interface BuildRepository {
  /** Records a new build; returns its id. */
  create(build: NewBuild): Promise<string>;
  /** Writes a build's fields. */
  update(id: string, fields: BuildUpdate): Promise<void>;
  /** Ends the operation's running builds as canceled (an unfinished run's, or an earlier delivery's). */
  cancelRunning(operationId: string): Promise<void>;
  /** The operation's newest succeeded or skipped build with an artifact still kept, or null. */
  shippable(operationId: string): Promise<ShippableBuild | null>;
  /** The project's build `id` when it still has its artifact, not removed (the one a redeploy ships), or null. */
  reusable(id: string, projectId: string): Promise<ShippableBuild | null>;
  /** The same repository writing in `tx` (a stage's success transaction). */
  within(tx: EntityManager): BuildRepository;
}

/** BuildRepository on the ORM. */
export class OrmBuildRepository extends OrmRepository implements BuildRepository {
  async create({ finished, ...fields }: NewBuild): Promise<string> {
    const now = this.clock.now();
    const build = Object.assign(new Build(), { ...fields, createdAt: now, ...(finished ? { finishedAt: now } : {}) });
    await insertRow(this.db, Build, build);
    return build.id;
  }

  async update(id: string, { finished, ...fields }: BuildUpdate): Promise<void> {
    await this.db.nativeUpdate(Build, { id }, { ...fields, ...(finished ? { finishedAt: this.clock.now() } : {}) });
  }

  async cancelRunning(operationId: string): Promise<void> {
    await this.db.nativeUpdate(
      Build,
      { operationId, status: 'running' },
      { status: 'canceled', finishedAt: this.clock.now() },
    );
  }

  async shippable(operationId: string): Promise<ShippableBuild | null> {
    const [row] = await this.rows<{ id: string; artifact_key: string; artifact_root: string | null }>(
      'select id, artifact_key, artifact_root from builds where operation_id = ? and status in (?, ?) ' +
        'and artifact_key is not null and artifact_removed_at is null order by created_at desc limit 1',
      [operationId, 'succeeded', 'skipped'],
    );
    return row ? { id: row.id, artifactKey: row.artifact_key, artifactRoot: row.artifact_root ?? null } : null;
  }

  async reusable(id: string, projectId: string): Promise<ShippableBuild | null> {
    return this.shippableOf(
      await this.db.findOne(Build, { id, projectId, artifactKey: { $ne: null }, artifactRemovedAt: null }),
    );
  }

  within(tx: EntityManager): BuildRepository {
    return new OrmBuildRepository(this.em, this.clock, tx);
  }

  private shippableOf(build: Build | null): ShippableBuild | null {
    return build?.artifactKey
      ? { id: build.id, artifactKey: build.artifactKey, artifactRoot: build.artifactRoot ?? null }
      : null;
  }
}
