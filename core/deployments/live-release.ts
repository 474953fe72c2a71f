import type { EntityManager } from '@mikro-orm/core';
import { Deployment, type ReleaseTarget } from '../entities/deployment.js';
import { Project } from '../entities/project.js';

/** What the edge needs to serve a project. */
export interface LiveRelease {
  projectId: string;
  deploymentId: string;
  visibility: string;
  target: ReleaseTarget;
}

// A static release's directory is written once, in the same write that makes it live, and never
// changes afterwards, so it is remembered by deployment id (other targets, e.g. a process's address
// after a restart, may change and are read every time). The project row (which release is live) is
// read on every request, so a switch is seen by the next request of every edge process.
const targets = new Map<string, ReleaseTarget>();
const MAX_TARGETS = 1000;

/**
 * The live release of the active project with `slug`, or null (unknown project, nothing live yet).
 * One query per call once the release's target is known.
 */
export async function findLiveRelease(em: EntityManager, slug: string): Promise<LiveRelease | null> {
  const project = await em.findOne(Project, { slug, status: 'active' }, { fields: ['id', 'visibility', 'liveDeploymentId'] });
  if (!project?.liveDeploymentId) return null;
  let target = targets.get(project.liveDeploymentId) ?? null;
  if (!target) {
    const d = await em.findOne(Deployment, { id: project.liveDeploymentId }, { fields: ['id', 'target'] });
    if (!d?.target) return null;
    target = d.target;
    if (target.kind !== 'static') return { projectId: project.id, deploymentId: d.id, visibility: project.visibility, target };
    if (targets.size >= MAX_TARGETS) targets.delete(targets.keys().next().value!);
    targets.set(d.id, target);
  }
  return { projectId: project.id, deploymentId: project.liveDeploymentId, visibility: project.visibility, target };
}
