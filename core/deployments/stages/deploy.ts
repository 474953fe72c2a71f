import type { EntityManager } from '@mikro-orm/core';
import { StageError } from '../../errors.js';
import type { OperationState } from '../../operations/state-machine.js';
import type { ChangeFeed } from '../../ports/change-feed.js';
import type { Deployer, ReleaseReports, ReleaseTarget } from '../../ports/deployer.js';
import type { EnvironmentService } from '../../environment/environment-service.js';
import type { Logger } from '../../tokens.js';
import { previewUrl, projectUrl } from '../../projects/project-url.js';
import { deploymentTarget } from '../deployment-target.js';
import type { PlanLimits } from '../../billing/plans.js';
import { routesChanged } from '../host-routes.js';
import { releaseSpec } from '../release-specs.js';
import { DRAIN_MS } from '../retirement.js';
import type { RoutingTable } from '../routing-table.js';
import type { BuildRepository } from '../repositories/build-repository.js';
import type { DeploymentRepository } from '../repositories/deployment-repository.js';
import type { StageContext, StageImpl } from '../stage-runner.js';
import type { Analysis } from './analyze.js';

/** The plan limits the Deploy stage reads. */
type Limits = Pick<PlanLimits, 'release_retention' | 'preview_ttl_hours' | 'previews_per_account'>;

/** What the stage keeps when it has no plan limits to read. */
const SMALLEST: Limits = { release_retention: 1, preview_ttl_hours: 24, previews_per_account: 3 };

/**
 * Deploy: the deployer makes the release ready; then, in the transaction that records the stage's
 * success, the project's route switches to it (so a canceled or failed deploy never goes live);
 * after the commit the previous release is stopped. A redeploy ships the existing build its state
 * names (`buildId`) instead of this operation's own (under skip_build, the one Build packed as this
 * stage started). A promote (its state names `promote`) starts no new release: the deployer resumes the
 * earlier one from what it kept, and the same switch makes it live again.
 *
 * After each switch the plan's release_retention decides what stays: the replaced release is suspended
 * (kept for a promote) or removed once drained (DRAIN_MS, on a timer of this process; a release the timer
 * missed, the process having stopped, is stopped by a worker's Retirement), and older superseded releases
 * beyond the count are pruned.
 *
 * A preview (its version's `target`) switches nothing: the release goes up on its own host until the plan's
 * preview_ttl_hours have passed, or until the account puts up more than previews_per_account (the oldest expire).
 * Promoting a preview that still serves makes it live as it runs.
 */
export class DeployStage implements StageImpl {
  constructor(
    private readonly deployer: Deployer,
    /** Where the deployer reports what becomes of a release once it runs. */
    private readonly reports: ReleaseReports,
    private readonly builds: BuildRepository,
    private readonly deployments: DeploymentRepository,
    private readonly environment: Pick<EnvironmentService, 'forRuntime'>,
    private readonly config: Parameters<typeof projectUrl>[0],
    private readonly log: Logger,
    /** Where the switch is announced to every edge, after it committed. */
    private readonly changes?: ChangeFeed,
    /** This process's routing table, shown the switch inside its transaction. */
    private readonly routes?: Pick<RoutingTable, 'preview'>,
    /** The account's plan limits (the smallest plan's without). */
    private readonly limits: (accountId: string) => Promise<Limits> = async () => SMALLEST,
  ) {}

  async run(ctx: StageContext) {
    const promoted = (ctx.operation.state as unknown as OperationState).promote;
    if (promoted) return this.promote(ctx, promoted);
    const reused = (ctx.operation.state as unknown as OperationState).buildId;
    const build = reused
      ? await this.builds.reusable(reused, ctx.project.id)
      : await this.builds.shippable(ctx.operation.id);
    if (reused && !build)
      throw new StageError(
        'deploy_build_missing',
        'The build to redeploy has no artifact any more; retry the build instead',
      );
    if (!build) throw new StageError('deploy_no_build', 'The operation has no build to deploy; retry it');
    const analysis = ctx.version.analysis as unknown as Analysis;
    // Read before anything is started: a variable that does not decrypt fails the stage with nothing to undo. A
    // static release runs nothing: it gets none.
    const deployedAs = deploymentTarget(ctx.version, ctx.operation);
    const env =
      analysis.runtime === 'static'
        ? {}
        : await this.environment.forRuntime(ctx.operation.id, ctx.project.id, deployedAs);
    await this.abandon(ctx);
    const preview = deployedAs === 'preview';
    const deploymentId = await this.deployments.create({
      accountId: ctx.operation.accountId,
      projectId: ctx.project.id,
      versionId: ctx.version.id,
      buildId: build.id,
      operationId: ctx.operation.id,
      preview,
    });
    const target = await this.deployer.prepare(
      {
        deploymentId,
        accountId: ctx.operation.accountId,
        projectId: ctx.project.id,
        slug: ctx.project.slug,
        runtime: analysis.runtime,
        artifactKey: build.artifactKey,
        ...(build.artifactRoot ? { artifactRoot: build.artifactRoot } : {}),
        startCommand: analysis.startCommand,
        env,
      },
      { signal: ctx.signal, log: () => {}, report: this.reports },
    );
    ctx.progress(0.9);
    return preview ? this.putUp(ctx, deploymentId, target) : this.switchTo(ctx, deploymentId, target);
  }

  /**
   * Puts preview `deploymentId` up on its own host in the success transaction; the live release stays. After the
   * commit, the account's oldest previews beyond previews_per_account expire: each may run an app.
   */
  private async putUp(ctx: StageContext, deploymentId: string, target: ReleaseTarget) {
    const { preview_ttl_hours: hours, previews_per_account: keep } = await this.planLimits(ctx.operation.accountId);
    const url = previewUrl(this.config, ctx.project.slug, ctx.operation.id);
    return {
      also: async (tx: EntityManager) => {
        await this.deployments.within(tx).goPreview(deploymentId, target, url, hours * 3_600_000);
        await this.routes?.preview(ctx.project.id, tx);
      },
      after: async () => {
        const expired = await this.deployments
          .expireBeyond(ctx.operation.accountId, keep, ctx.operation.id)
          .catch((err) => {
            this.log.warn({ err }, 'previews beyond the plan were not expired');
            return [];
          });
        // Every edge learns of the new preview and of those expired (this project's among them) before their
        // releases go, as when a preview's time is up.
        for (const projectId of new Set([ctx.project.id, ...expired.map((d) => d.projectId)]))
          await routesChanged(this.changes, projectId, this.log);
        for (const { id } of expired)
          await this.deployer
            .remove(id)
            .catch((err) => this.log.warn({ err, deploymentId: id }, 'a preview beyond the plan was not removed'));
      },
    };
  }

  /** The account's plan limits, or the smallest when they cannot be read (logged). */
  private planLimits(accountId: string): Promise<Limits> {
    return this.limits(accountId).catch((err) => {
      this.log.warn({ err }, 'the plan limits were not read; keeping only the live release, 3 previews for 24 h');
      return SMALLEST;
    });
  }

  /**
   * Makes the earlier release `id` ready again from what the deployer kept (a preview that serves: as it runs),
   * then switches to it.
   */
  private async promote(ctx: StageContext, id: string) {
    const release = await this.deployments.find(id);
    const gone = () => new StageError('deploy_release_gone', `Release ${id} is no longer kept; deploy it again`);
    if (!release || release.projectId !== ctx.project.id || release.prunedAt) throw gone();
    if (release.status === 'preview' && release.target) return this.switchTo(ctx, id, release.target);
    if (!this.deployer.resume) throw new StageError('deploy_not_promotable', 'The deployer cannot resume a release');
    const spec = await releaseSpec(this.deployments.manager(), release, this.environment);
    if (!spec) throw gone();
    const target = await this.deployer.resume(spec, { signal: ctx.signal, log: () => {}, report: this.reports });
    ctx.progress(0.9);
    return this.switchTo(ctx, id, target);
  }

  /**
   * The switch to `deploymentId` in the success transaction, and after the commit: the announcement to
   * every edge, pruning beyond retention, and the replaced release suspended or removed once drained.
   */
  private switchTo(ctx: StageContext, deploymentId: string, target: ReleaseTarget) {
    let previous: string | null = null;
    return {
      also: async (tx: EntityManager) => {
        previous = await this.deployments
          .within(tx)
          .goLive(deploymentId, ctx.project.id, target, (slug) => projectUrl(this.config, slug));
        await this.routes?.preview(ctx.project.id, tx, { deploymentId, target });
      },
      after: async () => {
        await routesChanged(this.changes, ctx.project.id, this.log);
        const warn = (what: string, id: string) => (err: unknown) => this.log.warn({ err, deploymentId: id }, what);
        const canKeep = Boolean(this.deployer.suspend && this.deployer.resume);
        const { release_retention: retention } = await this.planLimits(ctx.operation.accountId);
        const keep = canKeep ? retention - 1 : 0;
        const pruned = await this.deployments.prune(ctx.project.id, keep).catch((err) => {
          this.log.warn({ err }, 'releases beyond retention were not pruned');
          return [] as string[];
        });
        const old = previous;
        for (const id of pruned)
          if (id !== old) await this.deployer.remove(id).catch(warn('a pruned release was not removed', id));
        if (!old) return;
        const retire = async () => {
          // Promoted again while it drained: it serves now.
          if ((await this.deployments.find(old))?.status === 'live') return;
          if (canKeep && !pruned.includes(old)) await this.deployer.suspend!(old);
          else await this.deployer.remove(old);
        };
        setTimeout(() => void retire().catch(warn('the superseded release was not retired', old)), DRAIN_MS).unref();
      },
    };
  }

  /** Takes down releases this operation prepared that never went live. */
  async abandon(ctx: StageContext): Promise<void> {
    const promoted = (ctx.operation.state as unknown as OperationState).promote;
    const running = await this.deployments.running(ctx.operation.id);
    // A switch previewed in a transaction that did not commit (its release is still running) is read again as it
    // stands.
    if (promoted || running.length) await routesChanged(this.changes, ctx.project.id, this.log);
    // A promote that did not go live stops what it resumed, unless the release serves (live already, or a preview).
    if (promoted) {
      const status = (await this.deployments.find(promoted))?.status;
      if (status !== 'live' && status !== 'preview') await this.deployer.suspend?.(promoted);
    }
    for (const id of running) {
      await this.deployer.remove(id);
      await this.deployments.cancel(id);
    }
  }
}
