import type { EntityManager } from '@mikro-orm/core';
import { queryRows } from '../entities/plain-sql.js';
import type { HoistConfig } from '../../config/schema.js';
import { answerCache, type TaggedCache } from '../caching/tagged-cache.js';
import type { Build } from '../entities/build.js';
import { Operation } from '../entities/operation.js';
import type { Version } from '../entities/version.js';
import { notFound } from '../errors.js';
import { isMaybeStuck, recommendedNextStep, type NextStep } from '../operations/guidance.js';
import { STAGES, type OperationState, type Stage } from '../operations/state-machine.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import type { Clock } from '../ports/clock.js';
import type { Queue } from '../ports/queue.js';
import { analysisView } from './analysis-view.js';
import { ROUTES_CHANNEL } from './host-routes.js';
import { OPERATIONS_CHANNEL, projectOperations } from './log-chunks.js';
import { shareOf } from './account-share.js';
import { STAGE_TOPIC, stageJobKey } from './operation-store.js';
import { token } from '../tokens.js';

export const OPERATION_VIEWS = token<OperationViews>('hoist.OperationViews');

const iso = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString() : null);

/**
 * Why a stage was done without running: reused by a redeploy (the build it ships), not needed by a promote (the
 * release it makes live again), or Build left out by skip_build.
 */
const skipReason = (stage: Stage, state: OperationState) =>
  state.buildId
    ? `reused: this deployment ships the existing build ${state.buildId}`
    : state.promote
      ? `promote: release ${state.promote} goes live again as it was built`
      : stage === 'build'
        ? 'skip_build: the archive is deployed as it is, without a build'
        : 'not run for this deployment';

/** The operation as the API shows it (GET /operations/{id}). */
export interface OperationView {
  id: string;
  kind: string;
  status: string;
  progress: number;
  project_id: string | null;
  version_id: string | null;
  attempt: number;
  current_stage: string | null;
  stages: Record<string, unknown>;
  build_log: Record<string, unknown> | null;
  queue: Record<string, unknown> | null;
  maybe_stuck: boolean;
  next_step: NextStep;
  result: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}

const FINISHED = new Set(['succeeded', 'failed', 'canceled']);

/** Reads operations for the API: child state, build-log context, queue information and guidance. */
export class OperationViews {
  /** `get`'s views of finished operations by id, with the account that may see them. */
  private readonly finished?: TaggedCache<{ accountId: string; view: OperationView }>;

  /**
   * With `changes`, `get` keeps the views of finished operations: one changes only with a write announced on the
   * change feed, which drops it: on `operations`, one of the operation (a retry, its release failing) or of its
   * project (another operation finished: the live release may have changed); on `routes`, one of the project
   * (its live release, its deletion).
   */
  constructor(
    private readonly em: EntityManager,
    private readonly queue: Queue,
    private readonly clock: Clock,
    private readonly config: HoistConfig,
    changes?: Pick<ChangeFeed, 'subscribe'>,
  ) {
    if (!changes) return;
    const finished = (this.finished = answerCache(config));
    // Tagged with the keys of the `operations` channel: the operation's id and `projectOperations`.
    changes.subscribe(OPERATIONS_CHANNEL, (key) => finished.drop(key));
    changes.subscribe(ROUTES_CHANNEL, (id) => finished.drop(id === null ? null : projectOperations(id)));
  }

  /** The account's operation with `id` (any kind), or not_found. */
  async get(accountId: string, id: string): Promise<OperationView> {
    const now = this.clock.now().getTime();
    const kept = this.finished?.get(id, now);
    if (kept?.accountId === accountId) return kept.view;
    const epoch = this.finished?.epoch ?? 0;
    const op = await this.find(accountId, id);
    if (!op) throw notFound('Operation');
    const view = await this.view(op);
    if (FINISHED.has(view.status)) {
      const tags = op.projectId ? [id, projectOperations(op.projectId)] : [id];
      this.finished?.put(id, { accountId, view }, tags, now, epoch);
    }
    return view;
  }

  /**
   * The account's operation with `id` as stored, or null: a plain query, not an entity (not managed), since every
   * poll and every wake of an event stream reads it, and the entity load cost several times the query.
   */
  async find(accountId: string, id: string): Promise<Operation | null> {
    const row = await this.row<OperationRow>(OPERATION_QUERY, [id, accountId]);
    return row ? operationOf(row) : null;
  }

  /** Builds the view of an operation. */
  async view(op: Operation): Promise<OperationView> {
    const now = this.clock.now();
    const base = {
      id: op.id,
      kind: op.kind,
      status: op.status,
      progress: op.progress,
      project_id: op.projectId,
      version_id: op.versionId,
      created_at: iso(op.createdAt)!,
      updated_at: iso(op.updatedAt)!,
      finished_at: iso(op.finishedAt),
      error: op.error,
    };
    if (!op.state) {
      const done = FINISHED.has(op.status);
      return {
        ...base,
        attempt: 1,
        current_stage: null,
        stages: {},
        build_log: null,
        queue: null,
        maybe_stuck: false,
        next_step: done
          ? { action: 'none', message: `The operation ${op.status}.` }
          : {
              action: 'poll',
              message: `Poll GET /api/v1/operations/${op.id} every 2-10 s until its status is terminal.`,
            },
        result: null,
      };
    }
    const state = op.state as unknown as OperationState;
    const threshold = this.config.stuckAfterSeconds * 1000;
    // One plain query, not entities: every poll comes here, and hydrating four records cost more than reading them.
    // A redeploy builds nothing: its build is the one it ships.
    const records = (await this.row<RecordsRow>(state.buildId ? SHIPPED_BUILD_RECORDS : OWN_BUILD_RECORDS, [
      op.versionId,
      state.buildId ?? op.id,
      op.id,
      op.projectId,
    ]))!;
    const analysis = json<Version['analysis']>(records.analysis);
    const build = records.build_id ? { id: records.build_id, log: json<Build['log']>(records.build_log)! } : null;
    const stages: Record<string, unknown> = {};
    for (const name of STAGES) {
      const s = state.stages[name];
      // The state machine's `skipped` (done without running) is shown as the spec's `succeeded`, flagged and explained.
      const skipped = s.status === 'skipped';
      stages[name] = {
        status: skipped ? 'succeeded' : s.status,
        skipped,
        skip_reason: skipped ? skipReason(name, state) : null,
        progress: skipped ? 100 : s.progress,
        started_at: s.startedAt,
        finished_at: s.finishedAt,
        heartbeat_at: s.heartbeatAt,
        error: s.error,
        ...(name === 'analyze' && analysis ? { result: analysisView(analysis) } : {}),
      };
    }
    let queue: Record<string, unknown> | null = null;
    if (state.status === 'running' && state.current && op.heldSince) {
      const workers = await this.queue.workers(STAGE_TOPIC).catch(() => null);
      const share = workers === null ? null : shareOf(workers, this.config.reservedWorkerSlots);
      const runs = share === null ? 'its share of the workers' : `${share} at once, its share of the workers`;
      queue = {
        stage: state.current,
        state: 'held',
        jobs_ahead: 0,
        position: 0,
        workers,
        held_since: iso(op.heldSince),
        reason: `Held: the account already runs ${runs}; this deployment is queued as soon as one of its others ends.`,
      };
    } else if (state.status === 'running' && state.current) {
      // The queue being unreachable (a NATS restart) leaves queue null rather than failing the view.
      const p = await this.queue
        .position(STAGE_TOPIC, stageJobKey({ operationId: op.id, stage: state.current, attempt: state.attempt }))
        .catch(() => null);
      if (p)
        queue = {
          stage: state.current,
          state: p.state,
          jobs_ahead: p.jobsAhead,
          position: p.state === 'waiting' ? p.jobsAhead + 1 : 0,
          workers: p.workers,
        };
    }
    let result: Record<string, unknown> | null = null;
    if (state.status === 'succeeded') {
      const d = records.deployment_id;
      result = {
        url: d ? records.url : null,
        deployment_id: d,
        build_id: build?.id ?? null,
        live: !!d && records.live_deployment_id === d,
      };
    }
    return {
      ...base,
      attempt: state.attempt,
      current_stage: state.current,
      stages,
      build_log: build
        ? {
            build_id: build.id,
            last_lines: build.log.lastLines.slice(-20),
            warnings: build.log.warnings,
            errors: build.log.errors,
            bytes: build.log.bytes,
            full_log: `/api/v1/projects/${op.projectId}/builds/${build.id}/log`,
          }
        : null,
      queue,
      maybe_stuck: state.status === 'running' && isMaybeStuck(state, now, threshold),
      next_step: recommendedNextStep(state, now, threshold, op.id),
      result,
    };
  }

  /** The first row `sql` answers, or undefined. */
  private async row<T>(sql: string, params: unknown[]): Promise<T | undefined> {
    return (await queryRows<T>(this.em, sql, params))[0];
  }
}

const OPERATION_QUERY =
  'select id, account_id, project_id, kind, status, progress, error, state, revision, version_id, held_since, ' +
  'created_at, updated_at, finished_at from operations where id = ? and account_id = ?';
/**
 * What a deployment's view shows besides the operation, in one row (parameters: version id, build id or operation
 * id, operation id, project id): the version's analysis, the build (the one shipped, or the operation's newest),
 * and the operation's newest deployment that went live (or up, as a preview), with the project's live deployment to
 * say if it still is.
 */
const recordsQuery = (build: string) =>
  'select v.analysis, b.id as build_id, b.log as build_log, d.id as deployment_id, d.url, p.live_deployment_id ' +
  'from (select 1 as one) x left join versions v on v.id = ? ' +
  `left join builds b on b.id = (select id from builds where ${build} order by created_at desc limit 1) ` +
  'left join deployments d on d.id = (select id from deployments where operation_id = ? ' +
  "and status in ('live', 'superseded', 'preview', 'expired') order by created_at desc limit 1) " +
  'left join projects p on p.id = ?';
const SHIPPED_BUILD_RECORDS = recordsQuery('id = ?');
const OWN_BUILD_RECORDS = recordsQuery('operation_id = ?');

interface RecordsRow {
  analysis: unknown;
  build_id: string | null;
  build_log: unknown;
  deployment_id: string | null;
  url: string | null;
  live_deployment_id: string | null;
}

type Timestamp = Date | number | string;

interface OperationRow {
  id: string;
  account_id: string;
  project_id: string | null;
  kind: string;
  status: string;
  progress: number;
  error: unknown;
  state: unknown;
  revision: number;
  version_id: string | null;
  held_since: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  finished_at: Timestamp | null;
}

/** The operation a row holds, as the entity would load it (dates: Date on PostgreSQL, epoch ms on SQLite). */
const operationOf = (row: OperationRow): Operation =>
  Object.assign(new Operation(), {
    id: row.id,
    accountId: row.account_id,
    projectId: row.project_id,
    kind: row.kind,
    status: row.status,
    progress: Number(row.progress),
    error: json<Operation['error']>(row.error),
    state: json<Operation['state']>(row.state),
    revision: Number(row.revision),
    versionId: row.version_id,
    heldSince: row.held_since === null ? null : new Date(row.held_since),
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
    finishedAt: row.finished_at === null ? null : new Date(row.finished_at),
  });

/** A JSON column as read: text on SQLite, already parsed on PostgreSQL. */
const json = <T>(value: unknown): T | null =>
  value === null || value === undefined ? null : ((typeof value === 'string' ? JSON.parse(value) : value) as T);
