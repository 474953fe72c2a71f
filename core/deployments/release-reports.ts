import type { EntityManager } from '@mikro-orm/core';
import { Deployment } from '../entities/deployment.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import type { Clock } from '../ports/clock.js';
import type { ReleaseReports, ReleaseTarget } from '../ports/deployer.js';
import { token, type Logger } from '../tokens.js';
import { routesChanged } from './host-routes.js';
import { OPERATIONS_CHANNEL } from './log-chunks.js';
import type { Redaction } from './redaction.js';

/** Lines of a crashed release kept in its deployment's error. */
const LAST_LINES = 20;

/**
 * Records what deployers report on the deployment rows. A failure is recorded only on a live
 * deployment (one superseded or taken down meanwhile keeps its end), its message masked as it is
 * written: server paths, and the values of the environment the release was deployed with.
 */
export class DeploymentReports implements ReleaseReports {
  constructor(
    private readonly em: EntityManager,
    private readonly redaction: Pick<Redaction, 'forOperation'>,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** Where a new target (a restarted release's address) is announced to every edge. */
    private readonly changes?: ChangeFeed,
  ) {}

  async targetChanged(deploymentId: string, target: ReleaseTarget): Promise<void> {
    await this.write(deploymentId, async () => {
      const em = this.em.fork();
      await em.nativeUpdate(Deployment, { id: deploymentId }, { target });
      const d = await em.findOne(Deployment, { id: deploymentId }, { fields: ['projectId'] });
      if (d) await routesChanged(this.changes, d.projectId, this.log);
    });
  }

  async exited(deploymentId: string, summary: string, lastLines: string[]): Promise<void> {
    const tail = lastLines.slice(-LAST_LINES).join('\n');
    await this.fail(
      deploymentId,
      'deploy_crash_loop',
      `${summary} ${tail ? `Last lines:\n${tail}` : 'It printed nothing.'}`,
    );
  }

  async failed(deploymentId: string, reason: string): Promise<void> {
    await this.fail(deploymentId, 'deploy_restore_failed', `The release did not come back after a restart: ${reason}`);
  }

  private async fail(deploymentId: string, code: string, message: string): Promise<void> {
    await this.write(deploymentId, async () => {
      const em = this.em.fork();
      const d = await em.findOne(Deployment, { id: deploymentId }, { fields: ['operationId', 'projectId'] });
      if (!d) return;
      const masked = (await this.redaction.forOperation(d.operationId, d.projectId)).text(message);
      const n = await em.nativeUpdate(
        Deployment,
        { id: deploymentId, status: { $in: ['live', 'preview'] } },
        { status: 'failed', error: { code, message: masked }, endedAt: this.clock.now() },
      );
      // The deploying operation's view no longer shows it as its result.
      if (n) await this.changes?.publish(OPERATIONS_CHANNEL, d.operationId).catch(() => undefined);
    });
  }

  // A report comes from a deployer's own timer or event: there is no caller to hand a failure to.
  private async write(deploymentId: string, fn: () => Promise<unknown>): Promise<void> {
    await fn().catch((err: Error) =>
      this.log.error({ deploymentId, reason: err.message }, 'a deployer report could not be recorded'),
    );
  }
}

export const RELEASE_REPORTS = token<ReleaseReports>('hoist.ReleaseReports');
