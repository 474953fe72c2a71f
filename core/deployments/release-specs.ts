import type { EntityManager } from '@mikro-orm/core';
import { Build } from '../entities/build.js';
import { Deployment } from '../entities/deployment.js';
import { Project } from '../entities/project.js';
import { Version } from '../entities/version.js';
import type { ReleaseSpec } from '../ports/deployer.js';
import type { Analysis } from './stages/analyze.js';

/** The release spec of a deployment, from its version's analysis and its build's artifact. */
export async function releaseSpec(em: EntityManager, d: Deployment): Promise<ReleaseSpec | null> {
  const [version, build, project] = await Promise.all([
    em.findOne(Version, { id: d.versionId }),
    em.findOne(Build, { id: d.buildId }),
    em.findOne(Project, { id: d.projectId }),
  ]);
  const analysis = version?.analysis as unknown as Analysis | null;
  if (!analysis || !build?.artifactKey || !project) return null;
  return {
    deploymentId: d.id,
    projectId: d.projectId,
    slug: project.slug,
    runtime: analysis.runtime,
    artifactKey: build.artifactKey,
    startCommand: analysis.startCommand,
    env: {},
  };
}

/** The specs of every live deployment, for Deployer.restore after a restart. */
export async function liveReleaseSpecs(em: EntityManager): Promise<ReleaseSpec[]> {
  const specs: ReleaseSpec[] = [];
  for (const d of await em.find(Deployment, { status: 'live' })) {
    const spec = await releaseSpec(em, d);
    if (spec) specs.push(spec);
  }
  return specs;
}
