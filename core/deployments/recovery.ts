import type { EntityManager } from '@mikro-orm/core';
import { CHAIN_KINDS, Operation } from '../entities/operation.js';
import type { EnvironmentService } from '../environment/environment-service.js';
import type { OperationState } from '../operations/state-machine.js';
import type { Deployer, ReleaseReports } from '../ports/deployer.js';
import { token } from '../tokens.js';
import type { OperationStore } from './operation-store.js';
import { liveReleaseSpecs } from './release-specs.js';
import type { Retirement, RetirementReport } from './retirement.js';
import { sweepWorkspaces } from './workspace.js';
import type { Logger } from '../tokens.js';

/** What a worker found and did as it started. */
export interface RecoveryReport {
  /** Workspaces a process that stopped without cleaning up left behind, now removed. */
  workspaces: number;
  /** Live releases not brought back, and why (never a value of their environment). */
  unrestored: { deploymentId: string; reason: string }[];
  /** Unfinished deployments whose current stage was enqueued again. */
  resumed: number;
  /** Releases still running after their deployment ended (a drain timer lost with the last process), stopped. */
  retired: RetirementReport;
}

/**
 * What a worker does before it takes work: removes the workspaces a crashed process left behind,
 * brings live releases back (Deployer.restore), stops the releases that outlived their deployment
 * (Retirement: the last process stopped before their drain timer fired) and enqueues again the current
 * stage of every unfinished deployment (the queue de-duplicates), so a chain interrupted between a
 * stage's commit and the next enqueue resumes.
 */
export class Recovery {
  constructor(
    private readonly em: EntityManager,
    private readonly store: OperationStore,
    private readonly deployer: Deployer,
    /** Where the deployer reports the releases it brought back, or could not. */
    private readonly reports: ReleaseReports,
    private readonly environment: EnvironmentService,
    private readonly dataDir: string,
    private readonly retirement: Pick<Retirement, 'reconcile'>,
    /** Where a workspace left behind that could not be removed is reported (stderr without). */
    private readonly log?: Pick<Logger, 'warn'>,
  ) {}

  /** Recovers what the last process left; see the class. */
  async resume(): Promise<RecoveryReport> {
    const em = this.em.fork();
    // Never stops the start: a workspace that cannot be removed is reported and left for the next sweep.
    const workspaces = await sweepWorkspaces(this.dataDir, this.log).catch((err: unknown) => {
      if (this.log) this.log.warn({ err }, 'the workspaces left behind were not swept');
      else console.warn(`hoist: the workspaces left behind were not swept: ${(err as Error)?.message ?? err}`);
      return 0;
    });
    const unrestored: RecoveryReport['unrestored'] = [];
    const specs = await liveReleaseSpecs(em, this.environment, (deploymentId, err) =>
      unrestored.push({ deploymentId, reason: err.message }),
    );
    await this.deployer.restore(specs, this.reports);
    const retired = await this.retirement.reconcile();
    return { workspaces, unrestored, resumed: await this.requeue(), retired };
  }

  /**
   * Enqueues again the current stage of every unfinished deployment (the queue de-duplicates) and returns how many.
   * With `quietMs`, only a stage still queued in an operation that has not moved for that long: the workers run this
   * periodically, so that a stage whose enqueue failed (the queue away as the stage before committed, or as the
   * upload was recorded) runs once the queue answers again, not at the next worker start.
   */
  async requeue(quietMs?: number): Promise<number> {
    const quiet = quietMs === undefined ? {} : { updatedAt: { $lt: new Date(Date.now() - quietMs) } };
    let enqueued = 0;
    // Held chains wait for their account's share: each such account's are let go as far as it has room now (a
    // release lost with the process that ended a chain, or workers that joined since).
    const holding = new Set<string>();
    for (const op of await this.em
      .fork()
      .find(Operation, { kind: { $in: CHAIN_KINDS }, status: 'running', ...quiet })) {
      const state = op.state as unknown as OperationState;
      const status = state?.current ? state.stages[state.current].status : null;
      if (!status || status === 'skipped' || (quietMs !== undefined && status !== 'queued')) continue;
      if (op.heldSince) {
        holding.add(op.accountId);
        continue;
      }
      await this.store.carryOut(op, [{ type: 'enqueue_stage', stage: state.current!, attempt: state.attempt }]);
      enqueued++;
    }
    for (const accountId of holding) enqueued += await this.store.release(accountId);
    return enqueued;
  }
}

export const RECOVERY = token<Recovery>('hoist.Recovery');
