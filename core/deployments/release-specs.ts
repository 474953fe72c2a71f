import type { EntityManager } from '@mikro-orm/core';
import { Build } from '../entities/build.js';
import { Deployment } from '../entities/deployment.js';
import { Project } from '../entities/project.js';
import { Version } from '../entities/version.js';
import type { EnvironmentService } from '../environment/environment-service.js';
import type { ReleaseSpec } from '../ports/deployer.js';
import type { Analysis } from './stages/analyze.js';

/**
 * The release spec of a deployment, from its version's analysis, its build's artifact and the
 * runtime environment its operation was deployed with (its snapshot, not the project's current values).
 */
export async function releaseSpec(
  em: EntityManager,
  d: Deployment,
  environment: Pick<EnvironmentService, 'forRuntime'>,
): Promise<ReleaseSpec | null> {
  const [version, build, project] = await Promise.all([
    em.findOne(Version, { id: d.versionId }),
    em.findOne(Build, { id: d.buildId }),
    em.findOne(Project, { id: d.projectId }),
  ]);
  const analysis = version?.analysis as unknown as Analysis | null;
  if (!analysis || !build?.artifactKey || !project) return null;
  return {
    deploymentId: d.id,
    accountId: d.accountId,
    projectId: d.projectId,
    slug: project.slug,
    runtime: analysis.runtime,
    artifactKey: build.artifactKey,
    ...(build.artifactRoot ? { artifactRoot: build.artifactRoot } : {}),
    startCommand: analysis.startCommand,
    // Its snapshot was taken when it was deployed; the target only matters to one never taken.
    env: await environment.forRuntime(d.operationId, d.projectId, d.preview ? 'preview' : 'production'),
  };
}

/**
 * The specs of every live deployment and serving preview, for Deployer.restore after a restart. A deployment whose
 * environment does not decrypt is left out, and `skipped` is told why (never a value).
 */
export async function liveReleaseSpecs(
  em: EntityManager,
  environment: EnvironmentService,
  skipped: (deploymentId: string, err: Error) => void = () => {},
): Promise<ReleaseSpec[]> {
  const specs: ReleaseSpec[] = [];
  for (const d of await em.find(Deployment, { status: { $in: ['live', 'preview'] } })) {
    const spec = await releaseSpec(em, d, environment).catch((err: Error) => (skipped(d.id, err), null));
    if (spec) specs.push(spec);
  }
  return specs;
}
