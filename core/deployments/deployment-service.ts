import type { EntityManager, EntityName } from '@mikro-orm/core';
import { assertPlanAllows, type EntitlementService } from '../billing/entitlement-service.js';
import type { Plan } from '../billing/plans.js';
import { Build } from '../entities/build.js';
import { EnvironmentSnapshot } from '../entities/environment-snapshot.js';
import type { Deployment } from '../entities/deployment.js';
import { CHAIN_KINDS, Operation, type StartedBy } from '../entities/operation.js';
import { Project } from '../entities/project.js';
import { Version, type UploadOptions } from '../entities/version.js';
import { HoistError, notFound } from '../errors.js';
import { createOperation, isTerminal, type Transition } from '../operations/state-machine.js';
import type { Clock } from '../ports/clock.js';
import type { StoredObject } from '../ports/storage.js';
import { isUuid } from '../projects/keyset-cursor.js';
import { OperationStore } from './operation-store.js';
import type { AccountShare } from './account-share.js';
import type { FileRetention } from './file-retention.js';
import type { WebhookDeliveries } from '../webhooks/webhook-deliveries.js';
import { token, type Logger } from '../tokens.js';
import { insertRow, loadOne, queryRows, updateRows } from '../entities/plain-sql.js';
import { withTimeout } from '../with-timeout.js';

export const DEPLOYMENT_SERVICE = token<DeploymentService>('hoist.DeploymentService');

/** How long the start of a chain waits for the queue to take its first stage before it answers all the same. */
const ENQUEUE_WAIT_MS = 10_000;

/** What started a deployment and who: the release's provenance. */
export interface Provenance {
  source: string;
  startedBy: StartedBy | null;
}

/** An uploaded archive, already in Storage. */
export interface UploadedArchive extends StoredObject {
  filename: string | null;
}

/**
 * Starts (from an upload, a version or a build), cancels and retries deployment chains (Analyze → Build → Deploy). One
 * chain runs per
 * project: the project's `activeOperationId` is taken by compare-and-set and freed when the chain
 * ends.
 */
export class DeploymentService {
  constructor(
    private readonly em: EntityManager,
    private readonly store: OperationStore,
    private readonly entitlements: EntitlementService,
    private readonly clock: Clock,
    private readonly log?: Pick<Logger, 'warn' | 'info'>,
    /** Holds a chain its account's share of the workers has no room for; without it none is held. */
    private readonly share?: Pick<AccountShare, 'admit'>,
    /** Records and sends the `deployment.started` webhook deliveries of a chain that starts. */
    private readonly webhooks?: Pick<WebhookDeliveries, 'record' | 'dispatch'>,
    /** Keeps the account within its plan's stored_bytes once a chain has started; without it nothing is removed. */
    private readonly files?: Pick<FileRetention, 'trimAccount'>,
  ) {}

  /**
   * Records the version and starts its chain: the operation is `running` with progress 5 and Analyze
   * is enqueued. Throws deployment_in_progress (details.operation_id; checked first, as the spec's
   * one chain per project comes before plan quotas) or plan_restricted (archive size, deployments
   * per day, concurrent builds) and writes nothing then.
   */
  async start(
    accountId: string,
    project: Project,
    upload: UploadedArchive,
    options: UploadOptions,
    provenance: Provenance = { source: 'upload', startedBy: null },
  ): Promise<{ operation: Operation; version: Version }> {
    await this.assertNoChainRunning(project.id);
    const plan = await this.entitlements.planOf(accountId);
    assertPlanAllows(plan, 'archive_bytes', upload.size, 0);
    const planLimit = await this.assertPlanRoom(accountId, plan);

    const now = this.clock.now();
    const created = createOperation(now, { skipBuild: options.skip_build === true });
    const operation = Object.assign(this.newOperation(accountId, project.id, created), provenance);
    const version = Object.assign(new Version(), {
      accountId,
      projectId: project.id,
      operationId: operation.id,
      filename: upload.filename,
      archiveKey: upload.key,
      archiveSize: upload.size,
      archiveSha256: upload.sha256,
      options,
      createdAt: now,
    });
    operation.versionId = version.id;
    await this.launch(operation, created, planLimit, [version]);
    return { operation, version };
  }

  /**
   * Starts a new chain for an existing version of the account (a build retry): Analyze and Build run
   * again with the project's current settings, then Deploy. Throws not_found, not_retryable (details.reason
   * `archive_removed`: FileRetention removed its archive), plan_restricted (deployments per day) or
   * deployment_in_progress, and writes nothing then. `how.source` names what started it (retry by default);
   * `how.production` deploys it to production even when the version was uploaded as a preview.
   */
  async rebuild(
    accountId: string,
    versionId: string,
    startedBy?: StartedBy,
    how: { source?: string; production?: true } = {},
  ): Promise<Operation> {
    const version = isUuid(versionId) ? await this.em.findOne(Version, { id: versionId, accountId }) : null;
    if (!version) throw notFound('Version');
    if (version.archiveRemovedAt) throw archiveRemoved(version.id);
    await this.assertNoChainRunning(version.projectId);
    const planLimit = await this.assertPlanRoom(accountId);
    const created = createOperation(this.clock.now(), { skipBuild: version.options.skip_build === true });
    if (how.production) created.state.production = true;
    const operation = Object.assign(this.newOperation(accountId, version.projectId, created), {
      versionId: version.id,
      source: how.source ?? 'retry',
      startedBy: startedBy ?? null,
    });
    await this.launch(operation, created, planLimit);
    return operation;
  }

  /**
   * Starts a new chain that deploys an existing build of the account again (a deployment retry):
   * Analyze and Build are reused (skipped), Deploy ships the build's artifact. Throws not_found,
   * not_retryable (the build has no artifact, or details.reason `artifact_removed`: FileRetention removed it),
   * plan_restricted or deployment_in_progress, and writes nothing then. The build is deployed as what it was built
   * for: a build made for production (a deploy hook's, of a promoted preview's version) stays production, as it was
   * built with production values.
   */
  async redeploy(accountId: string, buildId: string, startedBy?: StartedBy): Promise<Operation> {
    const build = isUuid(buildId) ? await this.em.findOne(Build, { id: buildId, accountId }) : null;
    if (!build) throw notFound('Build');
    if (!build.artifactKey)
      throw new HoistError(
        'not_retryable',
        `Build ${build.id} has no artifact to deploy (it is ${build.status}); retry the build instead`,
        { build_id: build.id, status: build.status },
      );
    if (build.artifactRemovedAt) throw artifactRemoved(build.id);
    await this.assertNoChainRunning(build.projectId);
    const planLimit = await this.assertPlanRoom(accountId);
    const created = createOperation(this.clock.now(), { reuse: ['analyze', 'build'] });
    created.state.buildId = build.id;
    if (await this.builtForProduction(build)) created.state.production = true;
    const operation = Object.assign(this.newOperation(accountId, build.projectId, created), {
      versionId: build.versionId,
      source: 'retry',
      startedBy: startedBy ?? null,
    });
    await this.launch(operation, created, planLimit);
    return operation;
  }

  /**
   * Starts a promote of `release` (a deployment of the account's project, already found): Analyze and
   * Build are skipped, Deploy makes the release live again from what the deployer kept. A release that
   * is live already starts nothing: its own operation is returned. Throws plan_restricted (no
   * instant_rollback; plan_restricted comes first, so a plan without it learns nothing more),
   * not_promotable (details.reason `never_live`, `not_kept`, `unsupported`, or `preview_environment` for a preview
   * that took production- or preview-only variables), deployment_in_progress, and writes nothing then.
   */
  async promote(
    accountId: string,
    release: Deployment,
    liveId: string | null,
    canResume: boolean,
    startedBy?: StartedBy,
  ): Promise<Operation> {
    // Promoting a preview is no rollback: every plan may (an expired one is refused below as not kept).
    if (!release.preview) await this.entitlements.assertCapability(accountId, 'instant_rollback');
    if (liveId === release.id) return this.em.findOneOrFail(Operation, { id: release.operationId });
    const why = unpromotable(release, canResume, this.clock.now(), await tookTargeted(this.em, [release]));
    if (why) throw new HoistError('not_promotable', why.message, { release_id: release.id, reason: why.reason });
    await this.assertNoChainRunning(release.projectId);
    const planLimit = await this.assertConcurrentRoom(accountId);
    const created = createOperation(this.clock.now(), { reuse: ['analyze', 'build'] });
    created.state.promote = release.id;
    const operation = Object.assign(this.newOperation(accountId, release.projectId, created, 'promote'), {
      versionId: release.versionId,
      source: 'promote',
      startedBy: startedBy ?? null,
    });
    await this.launch(operation, created, planLimit);
    return operation;
  }

  /** Whether the operation that made `build` deployed to production whatever its version was (a deploy hook's). */
  private async builtForProduction(build: Build): Promise<boolean> {
    const op = await this.em.fork().findOne(Operation, { id: build.operationId });
    return !!op?.state && OperationStore.stateOf(op).production === true;
  }

  /** Cancels queued or running work (not_cancelable otherwise); the running stage is stopped by its worker. */
  async cancel(accountId: string, operationId: string): Promise<Operation> {
    await this.owned(accountId, operationId);
    return (await this.store.apply(operationId, { type: 'cancel_requested' })).op;
  }

  /**
   * Starts a new attempt of a failed or canceled deployment (not_retryable otherwise, or with details.reason
   * `archive_removed` or `artifact_removed` when that stage's input is gone), resuming at the first unfinished
   * stage; refused with deployment_in_progress while another chain runs.
   */
  async retry(accountId: string, operationId: string): Promise<Operation> {
    const op = await this.owned(accountId, operationId);
    await this.assertFilesKept(op);
    if (op.projectId) await this.assertNoChainRunning(op.projectId, op.id);
    const planLimit = await this.assertConcurrentRoom(accountId);
    let deliveries: string[] = [];
    const started = await this.store.apply(operationId, { type: 'retry_requested' }, async (tx, _t, written) => {
      await this.share?.admit(tx, written, planLimit, true);
      await this.takeChain(tx, op.projectId!, op.id);
      deliveries = (await this.webhooks?.record(tx, op.projectId!, op.id, 'started')) ?? [];
    });
    await this.webhooks?.dispatch(deliveries);
    return started.op;
  }

  /**
   * Throws not_retryable when what the first unfinished stage of `op` starts from was removed by FileRetention:
   * the version's archive for Analyze or Build, the build's artifact for Deploy (a promote needs neither).
   */
  private async assertFilesKept(op: Operation): Promise<void> {
    const state = OperationStore.stateOf(op);
    if (state.promote || !op.versionId || !isTerminal(state)) return;
    if (state.current !== 'deploy') {
      const version = await this.em.findOne(Version, { id: op.versionId }, { fields: ['archiveRemovedAt'] });
      if (version?.archiveRemovedAt) throw archiveRemoved(op.versionId);
      return;
    }
    const build = await this.em.findOne(
      Build,
      state.buildId ? { id: state.buildId } : { operationId: op.id, artifactKey: { $ne: null } },
      { fields: ['id', 'artifactRemovedAt'], orderBy: { createdAt: 'desc' } },
    );
    if (build?.artifactRemovedAt) throw artifactRemoved(build.id);
  }

  /**
   * Throws deployment_in_progress (details.operation_id) while another deployment chain of the
   * project (not `except`) runs. Only a read: starting a chain still takes it by compare-and-set;
   * this lets a caller refuse before plan quotas, or before it reads an upload's body.
   */
  async assertNoChainRunning(projectId: string, except?: string): Promise<void> {
    const em = this.em.fork();
    // A plain query of the one column: every upload asks, twice (before its archive is read, then to start).
    const [row] = await queryRows<{ active_operation_id: string | null }>(
      em,
      'select active_operation_id from projects where id = ? limit 1',
      [projectId],
    );
    const holder = row?.active_operation_id;
    if (!holder || holder === except) return;
    const running = await em.findOne(Operation, { id: holder });
    if (running && !isTerminal(OperationStore.stateOf(running))) throw inProgress(holder);
  }

  /** The deployment operation with `id` of the account, or not_found. */
  async owned(accountId: string, id: string): Promise<Operation> {
    const op = await this.em.findOne(Operation, { id, accountId, kind: { $in: CHAIN_KINDS } });
    if (!op) throw notFound('Operation');
    return op;
  }

  /**
   * Throws plan_restricted when the account has started its plan's deployments_per_day in the last
   * 24 h, or already runs its plan's concurrent_builds deployment chains; returns that limit.
   */
  private async assertPlanRoom(accountId: string, plan?: Plan): Promise<number> {
    const limits = plan ?? (await this.entitlements.planOf(accountId));
    const since = new Date(this.clock.now().getTime() - 24 * 3600 * 1000);
    const today = await this.count(
      'select count(*) as n from operations where account_id = ? and kind = ? and created_at >= ?',
      [accountId, 'deploy', this.em.getPlatform().processDateProperty(since)],
    );
    assertPlanAllows(limits, 'deployments_per_day', today);
    return this.assertConcurrentRoom(accountId, limits);
  }

  /**
   * Throws plan_restricted when the account already runs its plan's concurrent_builds deployment chains; returns that
   * limit.
   */
  private async assertConcurrentRoom(accountId: string, plan?: Plan): Promise<number> {
    const limits = plan ?? (await this.entitlements.planOf(accountId));
    const running = await this.count(
      `select count(*) as n from operations where account_id = ? and kind in (${CHAIN_KINDS.map(() => '?')}) ` +
        'and status = ?',
      [accountId, ...CHAIN_KINDS, 'running'],
    );
    assertPlanAllows(limits, 'concurrent_builds', running);
    return limits.limits.concurrent_builds;
  }

  /** What a plain count query answers (every upload counts twice; the ORM's count cost several times the query). */
  private async count(sql: string, params: unknown[]): Promise<number> {
    const [row] = await queryRows<{ n: number | string }>(this.em, sql, params);
    return Number(row?.n ?? 0);
  }

  /** A deployment operation (not yet written) in the created state. */
  private newOperation(accountId: string, projectId: string, created: Transition, kind = 'deploy'): Operation {
    const now = this.clock.now();
    return Object.assign(new Operation(), {
      accountId,
      projectId,
      kind,
      status: created.state.status,
      progress: created.state.progress,
      state: created.state as unknown as Record<string, unknown>,
      createdAt: now,
      updatedAt: now,
    });
  }

  /**
   * Takes the project's chain and writes the operation (and `also`) in one transaction, then enqueues its first stage.
   * The operation is recorded by then: a queue that does not take the stage (away for a moment) delays the chain and
   * never loses it, as the workers enqueue such a stage again (Recovery.requeue, every requeueSeconds). The answer
   * waits ENQUEUE_WAIT_MS for the queue at most. A chain its account's share of the workers has no room for is
   * written held, and enqueued when one of the account's chains ends (AccountShare); `planLimit` is the plan's
   * concurrent_builds.
   */
  private async launch(
    operation: Operation,
    created: Transition,
    planLimit: number,
    also: object[] = [],
  ): Promise<void> {
    const deliveries = await this.em.fork().transactional(async (tx) => {
      // First: the account's lock, if the share takes it, comes before the project's row (as a retry takes them).
      await this.share?.admit(tx, operation, planLimit, false);
      await this.takeChain(tx, operation.projectId!, operation.id);
      for (const row of [operation, ...also]) await insertRow(tx, row.constructor as EntityName<object>, row);
      return (await this.webhooks?.record(tx, operation.projectId!, operation.id, 'started')) ?? [];
    });
    await this.webhooks?.dispatch(deliveries);
    await withTimeout(this.store.carryOut(operation, created.effects), ENQUEUE_WAIT_MS).catch((err: unknown) => {
      this.log?.warn(
        { err, operationId: operation.id },
        'the first stage was not enqueued; a worker enqueues it again',
      );
    });
    if (this.files) void this.trim(operation.accountId, this.files);
  }

  /** Removes the account's oldest unretained files past its plan's stored_bytes, off the answer's path (logged). */
  private async trim(accountId: string, files: Pick<FileRetention, 'trimAccount'>): Promise<void> {
    try {
      const { limits } = await this.entitlements.planOf(accountId);
      const removed = await files.trimAccount(accountId, limits.stored_bytes);
      if (removed.archives || removed.artifacts)
        this.log?.info({ accountId, ...removed }, "removed the account's oldest files past its stored_bytes");
    } catch (err) {
      this.log?.warn({ err, accountId }, "the account's files past its stored_bytes were not removed");
    }
  }

  /** Takes the project's chain for `operationId`; a chain held by an operation that has ended is free. */
  private async takeChain(tx: EntityManager, projectId: string, operationId: string): Promise<void> {
    const project = await loadOne(tx, Project, { id: projectId, status: 'active' });
    if (!project) throw notFound('Project');
    const holder = project.activeOperationId;
    if (holder && holder !== operationId) {
      const running = await tx.findOne(Operation, { id: holder });
      if (running && !isTerminal(OperationStore.stateOf(running))) throw inProgress(holder);
    }
    const n = await updateRows(
      tx,
      Project,
      { id: projectId, activeOperationId: holder },
      { activeOperationId: operationId },
    );
    if (n !== 1) {
      const winner = (await tx.findOne(Project, { id: projectId }, { refresh: true }))?.activeOperationId;
      throw new HoistError(
        'deployment_in_progress',
        'Another deployment of this project has just started',
        winner ? { operation_id: winner } : {},
      );
    }
  }
}

/**
 * Of the previews among `releases`, the operations (`operationId`) that took production- or preview-only variables,
 * by their own environment snapshot or by the snapshot of the operation that made their build: a redeployed preview
 * build was built with the preview values, whatever its own deploy took (a static release takes none).
 */
export async function tookTargeted(em: EntityManager, releases: Deployment[]): Promise<Set<string>> {
  const previews = releases.filter((d) => d.status === 'preview');
  if (!previews.length) return new Set();
  const fork = em.fork();
  const builds = await fork.find(
    Build,
    { id: { $in: previews.map((d) => d.buildId) } },
    { fields: ['id', 'operationId'] },
  );
  const builtBy = new Map(builds.map((b) => [b.id, b.operationId]));
  const ops = [...new Set([...previews.map((d) => d.operationId), ...builtBy.values()])];
  const rows = await fork.find(
    EnvironmentSnapshot,
    { operationId: { $in: ops }, targeted: true },
    { fields: ['operationId'] },
  );
  const targeted = new Set(rows.map((r) => r.operationId));
  return new Set(
    previews
      .filter((d) => targeted.has(d.operationId) || targeted.has(builtBy.get(d.buildId) ?? ''))
      .map((d) => d.operationId),
  );
}

/**
 * Why a release cannot be promoted, or null when it can: a superseded release the deployer still keeps, or a
 * preview that has not expired and whose operation is not in `targeted` (it built and runs with preview values).
 */
export function unpromotable(
  release: Deployment,
  canResume: boolean,
  now = new Date(),
  targeted: ReadonlySet<string> = new Set(),
): { reason: string; message: string } | null {
  // A preview that still serves goes live as it runs, with nothing to resume.
  if (release.status === 'preview' && release.expiresAt && release.expiresAt > now) {
    if (!targeted.has(release.operationId)) return null;
    return {
      reason: 'preview_environment',
      message:
        `Preview ${release.id} was built and runs with the project's preview values (its project had production- ` +
        'or preview-only environment variables then); deploy the same files to production instead',
    };
  }
  if (!canResume)
    return { reason: 'unsupported', message: "This server's deployer cannot start an earlier release again" };
  if (!release.liveAt || release.status === 'running')
    return {
      reason: 'never_live',
      message: `Release ${release.id} never went live; only a release that did can be promoted`,
    };
  if (release.prunedAt || release.status !== 'superseded')
    return {
      reason: 'not_kept',
      message:
        `Release ${release.id} is no longer kept (pruned by the plan's release_retention, or failed); ` +
        'deploy it again',
    };
  return null;
}

const archiveRemoved = (versionId: string) =>
  new HoistError(
    'not_retryable',
    `The archive of version ${versionId} was removed (no retained release used it); upload it again`,
    { version_id: versionId, reason: 'archive_removed' },
  );

const artifactRemoved = (buildId: string) =>
  new HoistError(
    'not_retryable',
    `The artifact of build ${buildId} was removed (no retained release used it); retry the build instead`,
    { build_id: buildId, reason: 'artifact_removed' },
  );

const inProgress = (operationId: string) =>
  new HoistError(
    'deployment_in_progress',
    `A deployment of this project is still running (operation ${operationId}); wait for it to finish or cancel it`,
    {
      operation_id: operationId,
    },
  );
