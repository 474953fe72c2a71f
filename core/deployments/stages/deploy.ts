import type { EntityManager } from '@mikro-orm/core';
import type { HoistConfig } from '../../../config/schema.js';
import { Build } from '../../entities/build.js';
import { Deployment } from '../../entities/deployment.js';
import { Project } from '../../entities/project.js';
import { StageError } from '../../operations/stage-error.js';
import type { OperationState } from '../../operations/state-machine.js';
import type { Deployer } from '../../ports/deployer.js';
import type { EnvironmentService } from '../../environment/environment-service.js';
import { projectUrl } from '../../projects/project-url.js';
import type { StageContext, StageImpl } from '../stage-runner.js';
import type { Analysis } from './analyze.js';
import type { BuildStage } from './build.js';

/** How long a replaced release keeps its files, so requests already reading them finish. */
const DRAIN_MS = 30_000;

/**
 * Deploy: the deployer makes the release ready; then, in the transaction that records the stage's
 * success, the project's route switches to it (so a canceled or failed deploy never goes live);
 * after the commit the previous release is stopped. A redeploy ships the existing build its state
 * names (`buildId`) instead of this operation's own.
 */
export class DeployStage implements StageImpl {
  constructor(
    private readonly em: EntityManager,
    private readonly deployer: Deployer,
    private readonly builds: BuildStage,
    private readonly environment: EnvironmentService,
    private readonly config: HoistConfig,
  ) {}

  async run(ctx: StageContext) {
    const em = this.em.fork();
    const reused = (ctx.operation.state as unknown as OperationState).buildId;
    let build = reused
      ? await em.findOne(Build, { id: reused, projectId: ctx.project.id, artifactKey: { $ne: null } })
      : await em.findOne(Build, { operationId: ctx.operation.id, status: { $in: ['succeeded', 'skipped'] }, artifactKey: { $ne: null } }, { orderBy: { createdAt: 'desc' } });
    if (reused && !build) throw new StageError('deploy_build_missing', 'The build to redeploy has no artifact any more; retry the build instead', false);
    build ??= await this.builds.produce(ctx, true);
    // Read before anything is started: a variable that does not decrypt fails the stage with nothing to undo.
    const env = await this.environment.forRuntime(ctx.operation.id, ctx.project.id);
    await this.abandon(ctx);
    const analysis = ctx.version.analysis as unknown as Analysis;
    const deployment = Object.assign(new Deployment(), {
      accountId: ctx.operation.accountId,
      projectId: ctx.project.id,
      versionId: ctx.version.id,
      buildId: build.id,
      operationId: ctx.operation.id,
    });
    await em.persist(deployment).flush();
    const target = await this.deployer.prepare(
      {
        deploymentId: deployment.id,
        projectId: ctx.project.id,
        slug: ctx.project.slug,
        runtime: analysis.runtime,
        artifactKey: build.artifactKey!,
        startCommand: analysis.startCommand,
        env,
      },
      { signal: ctx.signal, log: () => {} },
    );
    ctx.progress(0.9);
    let previous: string | null = null;
    return {
      also: async (tx: EntityManager) => {
        const now = new Date();
        const project = await tx.findOneOrFail(Project, { id: ctx.project.id });
        previous = project.liveDeploymentId;
        await tx.nativeUpdate(Deployment, { id: deployment.id }, { status: 'live', target, url: projectUrl(this.config, project.slug), liveAt: now });
        if (previous) await tx.nativeUpdate(Deployment, { id: previous }, { status: 'superseded', endedAt: now });
        await tx.nativeUpdate(Project, { id: project.id }, { liveDeploymentId: deployment.id });
      },
      after: async () => {
        const old = previous;
        if (old) setTimeout(() => void this.deployer.remove(old).catch(() => {}), DRAIN_MS).unref();
      },
    };
  }

  /** Takes down releases this operation prepared that never went live. */
  async abandon(ctx: StageContext): Promise<void> {
    const em = this.em.fork();
    for (const d of await em.find(Deployment, { operationId: ctx.operation.id, status: 'running' })) {
      await this.deployer.remove(d.id);
      await em.nativeUpdate(Deployment, { id: d.id }, { status: 'canceled', endedAt: new Date() });
    }
  }
}
