import type { EntityManager } from '@mikro-orm/core';
import { BuildLogChunk } from '../entities/build-log-chunk.js';
import { Build } from '../entities/build.js';
import { Deployment } from '../entities/deployment.js';
import { Operation } from '../entities/operation.js';
import { Project } from '../entities/project.js';
import { Version } from '../entities/version.js';
import { queryRows } from '../entities/plain-sql.js';
import type { OperationState } from '../operations/state-machine.js';
import type { Clock } from '../ports/clock.js';
import type { Storage } from '../ports/storage.js';
import { token } from '../tokens.js';

export const FILE_RETENTION = token<FileRetention>('hoist.FileRetention');

/** Projects read at once. */
const BATCH = 200;
const TERMINAL = ['succeeded', 'failed', 'canceled'];
const DAY_MS = 24 * 3600 * 1000;

/** The fields of an unfinished operation the sweep reads. */
type Op = Pick<Operation, 'id' | 'versionId' | 'state'>;

/** What one sweep removed from Storage, by kind. */
export interface FilesRemoved {
  archives: number;
  artifacts: number;
  logs: number;
}

/** An archive or artifact an account keeps in Storage, with the row that names it. */
interface StoredFile {
  row: Pick<Version | Build, 'id' | 'projectId' | 'operationId' | 'createdAt'>;
  kind: 'archive' | 'artifact';
  key: string;
  size: number;
}

/** What a project still needs: versions and builds of its retained releases and unfinished operations. */
interface Retained {
  versions: Set<string>;
  builds: Set<string>;
  operations: Set<string>;
}

/**
 * Removes from Storage what deployments no longer need, so uploads do not pile up until their project is deleted:
 * a version's archive and a build's artifact once older than `fileDays`, a build's stored log once older than
 * `logDays` (its lines left in the database go with it). What a retained release uses stays: the live one, those
 * release_retention keeps (superseded, not pruned), running deployments, serving previews, and everything of an
 * unfinished operation. Each removal is first written on the row (`archiveRemovedAt`, `artifactRemovedAt`,
 * `logRemovedAt`), so reads and retries answer that it is gone; a content-addressed artifact other builds still
 * use stays in Storage until the last one lets it go.
 */
export class FileRetention {
  constructor(
    private readonly em: EntityManager,
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly fileDays: number,
    private readonly logDays: number,
  ) {}

  /** Sweeps every active project, in id order, until done or `stopped()`; returns what it removed. */
  async sweep(stopped: () => boolean = () => false): Promise<FilesRemoved> {
    const removed: FilesRemoved = { archives: 0, artifacts: 0, logs: 0 };
    let after: string | null = null;
    while (!stopped()) {
      const projects: Pick<Project, 'id' | 'liveDeploymentId'>[] = await this.em
        .fork()
        .find(
          Project,
          { status: 'active', ...(after ? { id: { $gt: after } } : {}) },
          { fields: ['id', 'liveDeploymentId'], orderBy: { id: 'asc' }, limit: BATCH },
        );
      for (const p of projects) {
        if (stopped()) break;
        const r = await this.project(p.id, p.liveDeploymentId);
        removed.archives += r.archives;
        removed.artifacts += r.artifacts;
        removed.logs += r.logs;
      }
      if (projects.length < BATCH) break;
      after = projects[projects.length - 1].id;
    }
    return removed;
  }

  /** Removes what project `projectId` keeps past its time and no longer needs. */
  async project(projectId: string, liveId: string | null): Promise<FilesRemoved> {
    const now = this.clock.now();
    const fileCutoff = new Date(now.getTime() - this.fileDays * DAY_MS);
    const logCutoff = new Date(now.getTime() - this.logDays * DAY_MS);
    const em = this.em.fork();
    const [versions, artifacts, logs] = await Promise.all([
      em.find(
        Version,
        { projectId, archiveRemovedAt: null, createdAt: { $lt: fileCutoff } },
        { fields: ['id', 'archiveKey', 'operationId'] },
      ),
      em.find(
        Build,
        { projectId, artifactKey: { $ne: null }, artifactRemovedAt: null, createdAt: { $lt: fileCutoff } },
        { fields: ['id', 'artifactKey', 'operationId'] },
      ),
      em.find(
        Build,
        { projectId, logKey: { $ne: null }, logRemovedAt: null, createdAt: { $lt: logCutoff } },
        { fields: ['id', 'logKey', 'operationId'] },
      ),
    ]);
    const removed: FilesRemoved = { archives: 0, artifacts: 0, logs: 0 };
    if (!versions.length && !artifacts.length && !logs.length) return removed;
    const kept = await this.retained(em, projectId, liveId);
    const spare = (b: Pick<Build, 'id' | 'operationId'>) =>
      !kept.builds.has(b.id) && !kept.operations.has(b.operationId);
    const usesBuild = (b: Pick<Build, 'id' | 'operationId'>) => (o: Op) =>
      o.id === b.operationId || stateOf(o).buildId === b.id;
    for (const v of versions.filter((v) => !kept.versions.has(v.id) && !kept.operations.has(v.operationId)))
      if (await this.mark(Version, v.id, 'archiveRemovedAt', projectId, (o) => o.versionId === v.id)) {
        await this.dropIfUnused(v.archiveKey, projectId);
        removed.archives++;
      }
    for (const b of artifacts.filter(spare))
      if (await this.mark(Build, b.id, 'artifactRemovedAt', projectId, usesBuild(b))) {
        await this.dropIfUnused(b.artifactKey!, projectId);
        removed.artifacts++;
      }
    for (const b of logs.filter(spare))
      if (await this.mark(Build, b.id, 'logRemovedAt', projectId, usesBuild(b))) {
        await em.nativeDelete(BuildLogChunk, { operationId: b.operationId, buildId: b.id, inStorage: false });
        await this.storage.delete(b.logKey!);
        removed.logs++;
      }
    return removed;
  }

  /**
   * Keeps the account's archives and artifacts in Storage within `limitBytes` (the plan's stored_bytes, each object
   * counted once however many rows name it): when over, removes what no retained release or unfinished operation
   * uses, oldest first across its projects and whatever its age, until under. What is retained stays even past the
   * limit. Resolves what it removed.
   */
  async trimAccount(accountId: string, limitBytes: number): Promise<FilesRemoved> {
    const removed: FilesRemoved = { archives: 0, artifacts: 0, logs: 0 };
    const em = this.em.fork();
    // One sum on every deployment's start; the rows only when the account is over.
    if ((await storedBytes(em, accountId)) <= limitBytes) return removed;
    const [versions, builds] = await Promise.all([
      em.find(
        Version,
        { accountId, archiveRemovedAt: null },
        { fields: ['id', 'projectId', 'archiveKey', 'archiveSize', 'operationId', 'createdAt'] },
      ),
      em.find(
        Build,
        { accountId, artifactKey: { $ne: null }, artifactRemovedAt: null },
        { fields: ['id', 'projectId', 'artifactKey', 'artifactSize', 'operationId', 'createdAt'] },
      ),
    ]);
    const files: StoredFile[] = [
      ...versions.map((v) => ({ row: v, kind: 'archive' as const, key: v.archiveKey, size: v.archiveSize })),
      ...builds.map((b) => ({ row: b, kind: 'artifact' as const, key: b.artifactKey!, size: b.artifactSize ?? 0 })),
    ];
    // Rows naming each object: it leaves Storage with the last of them.
    const names = new Map<string, number>();
    let used = 0;
    for (const f of files) {
      if (!names.has(f.key)) used += f.size;
      names.set(f.key, (names.get(f.key) ?? 0) + 1);
    }
    if (used <= limitBytes) return removed;
    const kept = new Map<string, Retained>();
    const retainedOf = async (projectId: string) => {
      if (!kept.has(projectId)) {
        const project = await em.findOne(Project, { id: projectId }, { fields: ['liveDeploymentId'] });
        kept.set(projectId, await this.retained(em, projectId, project?.liveDeploymentId ?? null));
      }
      return kept.get(projectId)!;
    };
    files.sort((a, b) => a.row.createdAt.getTime() - b.row.createdAt.getTime());
    for (const f of files) {
      if (used <= limitBytes) break;
      const { id, projectId, operationId } = f.row;
      const retained = await retainedOf(projectId);
      if (retained.operations.has(operationId)) continue;
      if (f.kind === 'archive') {
        if (retained.versions.has(id)) continue;
        if (!(await this.mark(Version, id, 'archiveRemovedAt', projectId, (o) => o.versionId === id))) continue;
        removed.archives++;
      } else {
        if (retained.builds.has(id)) continue;
        const uses = (o: Op) => o.id === operationId || stateOf(o).buildId === id;
        if (!(await this.mark(Build, id, 'artifactRemovedAt', projectId, uses))) continue;
        removed.artifacts++;
      }
      await this.dropIfUnused(f.key, projectId);
      const left = names.get(f.key)! - 1;
      names.set(f.key, left);
      if (!left) used -= f.size;
    }
    return removed;
  }

  /**
   * Writes the removal on the row (when no other sweep did), then checks that no unfinished operation of the project
   * `uses` it (one may have started since `retained` looked), taking the mark back if one does; true when it stands.
   */
  private async mark(
    entity: typeof Version | typeof Build,
    id: string,
    field: 'archiveRemovedAt' | 'artifactRemovedAt' | 'logRemovedAt',
    projectId: string,
    uses: (o: Op) => boolean,
  ): Promise<boolean> {
    const em = this.em.fork();
    if ((await em.nativeUpdate(entity as typeof Build, { id, [field]: null }, { [field]: this.clock.now() })) !== 1)
      return false;
    const unfinished = await em.find(
      Operation,
      { projectId, status: { $nin: TERMINAL } },
      { fields: ['id', 'versionId', 'state'] },
    );
    if (!unfinished.some(uses)) return true;
    await em.nativeUpdate(entity as typeof Build, { id }, { [field]: null });
    return false;
  }

  /** Deletes the object at `key` unless a version of the project or any build not marked removed still uses it. */
  private async dropIfUnused(key: string, projectId: string): Promise<void> {
    const em = this.em.fork();
    if (await em.count(Build, { artifactKey: key, artifactRemovedAt: null })) return;
    if (await em.count(Version, { projectId, archiveKey: key, archiveRemovedAt: null })) return;
    await this.storage.delete(key);
  }

  /** The versions, builds and operations of the project's retained releases and unfinished operations. */
  private async retained(em: EntityManager, projectId: string, liveId: string | null): Promise<Retained> {
    const ops = await em.find(
      Operation,
      { projectId, status: { $nin: TERMINAL } },
      { fields: ['id', 'versionId', 'state'] },
    );
    const promoted = ops.flatMap((o) => stateOf(o).promote ?? []);
    const releases = await em.find(
      Deployment,
      {
        projectId,
        $or: [
          { status: { $in: ['running', 'live', 'preview'] } },
          { status: 'superseded', prunedAt: null },
          { id: { $in: [...(liveId ? [liveId] : []), ...promoted] } },
        ],
      },
      { fields: ['versionId', 'buildId'] },
    );
    return {
      versions: new Set([...releases.map((d) => d.versionId), ...ops.flatMap((o) => o.versionId ?? [])]),
      builds: new Set([...releases.map((d) => d.buildId), ...ops.flatMap((o) => stateOf(o).buildId ?? [])]),
      operations: new Set(ops.map((o) => o.id)),
    };
  }
}

/**
 * Bytes the account's archives and artifacts take in Storage, each object once (a build that ships its upload as it is
 * names the same key as its version).
 */
async function storedBytes(em: EntityManager, accountId: string): Promise<number> {
  const [row] = await queryRows<{ bytes: number | string | null }>(
    em,
    'select sum(size) as bytes from (' +
      'select archive_key as k, archive_size as size from versions ' +
      'where account_id = ? and archive_removed_at is null ' +
      'union select artifact_key, coalesce(artifact_size, 0) from builds ' +
      'where account_id = ? and artifact_key is not null and artifact_removed_at is null) stored',
    [accountId, accountId],
  );
  return Number(row?.bytes ?? 0);
}

/** What a chain operation's state says of the build it redeploys and the release it promotes. */
const stateOf = (o: Op) => (o.state ?? {}) as Pick<OperationState, 'buildId' | 'promote'>;
