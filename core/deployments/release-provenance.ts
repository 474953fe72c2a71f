import type { EntityManager } from '@mikro-orm/core';
import type { Deployment } from '../entities/deployment.js';
import { Operation, type StartedBy } from '../entities/operation.js';
import { Version } from '../entities/version.js';
import { tookTargeted, unpromotable } from './deployment-service.js';

/** Where a release came from, and whether it can be made live again. */
export interface ReleaseNotes {
  /** `preview` for a release deployed as a preview (and not promoted since), else `production`. */
  target: 'production' | 'preview';
  /**
   * What started the operation that made it: `upload`, `upload_session`, `promote`, `retry` or `deploy_hook`; null if
   * unrecorded.
   */
  source: string | null;
  /** Who started it; null if unrecorded. */
  started_by: StartedBy | null;
  /** SHA-256 of the uploaded archive it was built from. */
  archive_sha256: string;
  /**
   * True while it is superseded and kept (within the plan's release_retention), or a preview that serves: promote
   * makes it live.
   */
  promotable: boolean;
}

/** The release notes of `releases` (deployments of one project), by deployment id, read in two queries. */
export async function releaseNotes(
  em: EntityManager,
  releases: Deployment[],
  canResume: boolean,
): Promise<Map<string, ReleaseNotes>> {
  const [ops, versions, targeted] = await Promise.all([
    em.find(Operation, { id: { $in: releases.map((d) => d.operationId) } }, { fields: ['id', 'source', 'startedBy'] }),
    em.find(Version, { id: { $in: releases.map((d) => d.versionId) } }, { fields: ['id', 'archiveSha256'] }),
    tookTargeted(em, releases),
  ]);
  const opOf = new Map(ops.map((o) => [o.id, o]));
  const shaOf = new Map(versions.map((v) => [v.id, v.archiveSha256]));
  return new Map(
    releases.map((d) => [
      d.id,
      {
        target: d.preview ? 'preview' : 'production',
        source: opOf.get(d.operationId)?.source ?? null,
        started_by: opOf.get(d.operationId)?.startedBy ?? null,
        archive_sha256: shaOf.get(d.versionId) ?? '',
        promotable: unpromotable(d, canResume, new Date(), targeted) === null,
      },
    ]),
  );
}
