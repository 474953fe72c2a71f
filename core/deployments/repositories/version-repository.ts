import type { EntityManager } from '@mikro-orm/core';
import { updateRows } from '../../entities/plain-sql.js';
import { Version } from '../../entities/version.js';
import { OrmRepository } from './orm-repository.js';

/** The version records the Analyze stage writes. */
export interface VersionRepository {
  /** Stores what Analyze found in the version's archive. */
  recordAnalysis(versionId: string, analysis: object): Promise<void>;
  /** The same repository writing in `tx` (a stage's success transaction). */
  within(tx: EntityManager): VersionRepository;
}

/** VersionRepository on the ORM. */
export class OrmVersionRepository extends OrmRepository implements VersionRepository {
  async recordAnalysis(versionId: string, analysis: object): Promise<void> {
    await updateRows(this.db, Version, { id: versionId }, { analysis: analysis as Record<string, unknown> });
  }

  within(tx: EntityManager): VersionRepository {
    return new OrmVersionRepository(this.em, this.clock, tx);
  }
}
