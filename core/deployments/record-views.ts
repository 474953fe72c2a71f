import type { Build } from '../entities/build.js';
import type { Deployment } from '../entities/deployment.js';
import type { Project } from '../entities/project.js';
import type { Version } from '../entities/version.js';
import { analysisView } from './analysis-view.js';

/** A timestamp as ISO 8601, or null. */
export const iso = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString() : null);

/** A version record as the API shows it. */
export function versionView(v: Version) {
  return {
    id: v.id,
    project_id: v.projectId,
    operation_id: v.operationId,
    filename: v.filename,
    size: v.archiveSize,
    sha256: v.archiveSha256,
    options: v.options,
    analysis: v.analysis ? analysisView(v.analysis) : null,
    created_at: iso(v.createdAt)!,
    archive_removed_at: iso(v.archiveRemovedAt),
  };
}

/**
 * A build record as the API shows it. A build packed without running build commands (skip_build,
 * stored as `skipped`) is shown `succeeded` with `skipped: true`: the spec knows five statuses.
 */
export function buildView(b: Build) {
  return {
    id: b.id,
    project_id: b.projectId,
    version_id: b.versionId,
    operation_id: b.operationId,
    status: b.status === 'skipped' ? 'succeeded' : b.status,
    skipped: b.status === 'skipped',
    artifact: b.artifactKey ? { key: b.artifactKey, sha256: b.artifactSha256, size: b.artifactSize } : null,
    log: { last_lines: b.log.lastLines, warnings: b.log.warnings, errors: b.log.errors, bytes: b.log.bytes },
    log_url: `/api/v1/projects/${b.projectId}/builds/${b.id}/log`,
    error: b.error,
    created_at: iso(b.createdAt)!,
    finished_at: iso(b.finishedAt),
    artifact_removed_at: iso(b.artifactRemovedAt),
    log_removed_at: iso(b.logRemovedAt),
  };
}

/** A deployment record as the API shows it; `live` says whether the project serves it now. */
export function deploymentView(d: Deployment, project: Project) {
  return {
    id: d.id,
    project_id: d.projectId,
    status: d.status,
    url: d.url,
    build_id: d.buildId,
    version_id: d.versionId,
    operation_id: d.operationId,
    live: project.liveDeploymentId === d.id,
    error: d.error,
    created_at: iso(d.createdAt)!,
    live_at: iso(d.liveAt),
    ended_at: iso(d.endedAt),
    expires_at: iso(d.expiresAt),
  };
}

export type VersionView = ReturnType<typeof versionView>;
export type BuildView = ReturnType<typeof buildView>;
export type DeploymentView = ReturnType<typeof deploymentView>;
