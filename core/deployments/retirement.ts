import type { EntityManager } from '@mikro-orm/core';
import { Deployment } from '../entities/deployment.js';
import { Project } from '../entities/project.js';
import type { Clock } from '../ports/clock.js';
import type { Deployer } from '../ports/deployer.js';
import { token, type Logger } from '../tokens.js';

/** How long a replaced release keeps running once it stopped serving, so requests already in it finish. */
export const DRAIN_MS = 30_000;

/** The statuses of a deployment whose release must not run once drained. */
const ENDED = ['superseded', 'canceled', 'failed', 'expired'];
/** Those whose release is never started again: removed, stopped or not, ENDED_KEEP_MS after they ended. */
const FINISHED = ['canceled', 'failed', 'expired'];
/** How long a finished deployment's release is kept (a crashed one's log can be read): a day. */
export const ENDED_KEEP_MS = 24 * 3600_000;
/** Finished releases removed per round. */
const SWEEP_BATCH = 100;
/** How long a finished release this process failed to remove is skipped by its sweep, so others get their turn. */
const SWEEP_RETRY_MS = 3600_000;
/** The most failed removals a process remembers (the oldest forgotten first). */
const SWEEP_FAILURES_KEPT = 1000;

/** The form of a deployment id (a deployment table's primary key); another label is no deployment of ours. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What to do with the releases the deployer runs. */
export interface RetirementPlan {
  /** Ended, drained, and promotable still (superseded, not pruned, the deployer can resume): stopped, kept. */
  suspend: string[];
  /** Ended and drained, and not to be promoted: stopped and removed. */
  remove: string[];
  /** Not deployments of this database (another Hoist sharing the engine): left alone. */
  unknown: string[];
}

/** What a round of `reconcile` did. */
export interface RetirementReport {
  /** Releases the deployer said it runs. */
  running: number;
  suspended: number;
  removed: number;
  /** Releases to stop that the deployer did not stop (each logged); the next round tries again. */
  failed: number;
  /** Running releases this database does not know, left alone. */
  unknown: number;
}

/**
 * Stops the releases that still run after their deployment ended. The Deploy stage retires a replaced
 * release on a timer once it drained (DRAIN_MS); a process that stops within that time, or a retirement that
 * fails, leaves it running. A worker reconciles at start (Recovery) and periodically: every release the
 * deployer runs (Deployer.runningReleases) whose deployment is superseded, canceled, failed or expired, and
 * ended more than DRAIN_MS ago, is suspended (when a promote may start it again) or removed.
 *
 * A deployment that failed, was canceled or expired is removed, running or not, a day after it ended (ENDED_KEEP_MS).
 *
 * A `running` (a deploy in flight), `live` or `preview` deployment is never touched, nor one of a project that
 * runs a chain (a promote may be starting it), nor a release this database does not know. Any number of
 * workers may reconcile at once: suspend and remove are idempotent.
 */
export class Retirement {
  /** The unknown releases already logged, each once per process. */
  private readonly told = new Set<string>();
  /** Finished releases this process failed to remove, and when it may try each again (sweep). */
  private readonly stuck = new Map<string, number>();

  constructor(
    private readonly em: EntityManager,
    private readonly deployer: Deployer,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Sorts the deployment ids of running releases into what to suspend, what to remove and what is not ours. */
  async plan(running: string[]): Promise<RetirementPlan> {
    const ids = [...new Set(running)];
    const em = this.em.fork();
    const rows = await em.find(
      Deployment,
      { id: { $in: ids.filter((id) => UUID.test(id)) } },
      { fields: ['id', 'projectId', 'status', 'endedAt', 'prunedAt'], disableIdentityMap: true },
    );
    const drained = this.clock.now().getTime() - DRAIN_MS;
    const due = rows.filter((d) => ENDED.includes(d.status) && d.endedAt && d.endedAt.getTime() <= drained);
    const projects = [...new Set(due.map((d) => d.projectId))];
    const busy = new Set(
      (await em.find(Project, { id: { $in: projects }, activeOperationId: { $ne: null } }, { fields: ['id'] })).map(
        (p) => p.id,
      ),
    );
    const canKeep = Boolean(this.deployer.suspend && this.deployer.resume);
    const stop = due.filter((d) => !busy.has(d.projectId));
    const kept = (d: Pick<Deployment, 'status' | 'prunedAt'>) => canKeep && d.status === 'superseded' && !d.prunedAt;
    const known = new Set(rows.map((d) => d.id));
    return {
      suspend: stop.filter(kept).map((d) => d.id),
      remove: stop.filter((d) => !kept(d)).map((d) => d.id),
      unknown: ids.filter((id) => !known.has(id)),
    };
  }

  /**
   * Stops every release the deployer runs whose deployment ended more than DRAIN_MS ago (see the class) and
   * says what it did. A deployer without `runningReleases`, or one that cannot say (logged), stops nothing.
   */
  async reconcile(): Promise<RetirementReport> {
    const report: RetirementReport = { running: 0, suspended: 0, removed: 0, failed: 0, unknown: 0 };
    if (!this.deployer.runningReleases) return report;
    const running = await this.deployer.runningReleases().catch((err) => {
      this.log.warn({ err }, 'the deployer did not say which releases it runs; none was retired');
      return [] as string[];
    });
    report.running = running.length;
    const plan = await this.plan(running);
    report.unknown = plan.unknown.length;
    const untold = plan.unknown.filter((id) => !this.told.has(id));
    untold.forEach((id) => this.told.add(id));
    if (untold.length)
      this.log.info({ deploymentIds: untold }, 'releases of deployments this database does not know run: left alone');
    const stop = async (id: string, how: (id: string) => Promise<void>, done: 'suspended' | 'removed') => {
      try {
        await how(id);
        report[done]++;
      } catch (err) {
        report.failed++;
        this.log.warn({ err, deploymentId: id }, 'a release that outlived its deployment was not stopped');
      }
    };
    for (const id of plan.suspend) await stop(id, (d) => this.deployer.suspend!(d), 'suspended');
    for (const id of plan.remove) await stop(id, (d) => this.deployer.remove(d), 'removed');
    return report;
  }

  /**
   * Removes the releases of deployments that failed, were canceled or expired more than ENDED_KEEP_MS ago, running or
   * not, and marks them pruned: a stopped release (a crash loop's container, image and environment, a local release's
   * files) is in no list of running releases, so nothing else would ever remove it. A project's live deployment
   * (one that crashed) keeps its release until another takes its place. SWEEP_BATCH a round, oldest first; one this
   * process failed to remove (logged) waits SWEEP_RETRY_MS, so the others are not held behind it. Adds to `report`.
   */
  async sweep(report: RetirementReport): Promise<void> {
    const em = this.em.fork();
    const now = this.clock.now();
    for (const [id, until] of this.stuck) if (until <= now.getTime()) this.stuck.delete(id);
    const due = await em.find(
      Deployment,
      {
        prunedAt: null,
        endedAt: { $lt: new Date(now.getTime() - ENDED_KEEP_MS) },
        status: { $in: FINISHED },
        ...(this.stuck.size ? { id: { $nin: [...this.stuck.keys()] } } : {}),
      },
      { fields: ['id'], orderBy: { endedAt: 'asc' }, limit: SWEEP_BATCH, disableIdentityMap: true },
    );
    const ids = due.map((d) => d.id);
    const live = new Set(
      (await em.find(Project, { liveDeploymentId: { $in: ids } }, { fields: ['liveDeploymentId'] })).map(
        (p) => p.liveDeploymentId,
      ),
    );
    for (const id of ids.filter((id) => !live.has(id))) {
      try {
        await this.deployer.remove(id);
        await em.nativeUpdate(Deployment, { id, prunedAt: null }, { prunedAt: now });
        report.removed++;
      } catch (err) {
        report.failed++;
        if (this.stuck.size >= SWEEP_FAILURES_KEPT) this.stuck.delete(this.stuck.keys().next().value!);
        this.stuck.set(id, now.getTime() + SWEEP_RETRY_MS);
        this.log.warn({ err, deploymentId: id }, 'a finished release was not removed');
      }
    }
  }
}

export const RETIREMENT = token<Retirement>('hoist.Retirement');
