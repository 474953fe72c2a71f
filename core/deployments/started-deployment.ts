import type { Operation } from '../entities/operation.js';
import type { Project } from '../entities/project.js';
import type { Version } from '../entities/version.js';
import { deploymentTarget } from './deployment-target.js';

/**
 * A deployment chain a write has just started: plain JSON, so an Idempotency-Key can remember it and
 * a repeated request gets it again as it was.
 */
export interface StartedDeployment {
  project: { id: string; name: string; slug: string };
  operation: { id: string; status: string; progress: number };
  /** The uploaded archive, when the write was an upload. */
  version?: { id: string; size: number; sha256: string };
  /** Present when the upload deploys a preview (its URL derives from the project's slug and the operation). */
  preview?: true;
}

/** The started deployment of `operation` on `project` (from the upload `version`, if any). */
export function startedDeployment(project: Project, operation: Operation, version?: Version): StartedDeployment {
  return {
    project: { id: project.id, name: project.name, slug: project.slug },
    operation: { id: operation.id, status: operation.status, progress: operation.progress },
    ...(version && { version: { id: version.id, size: version.archiveSize, sha256: version.archiveSha256 } }),
    ...(version && deploymentTarget(version, operation) === 'preview' && { preview: true as const }),
  };
}
