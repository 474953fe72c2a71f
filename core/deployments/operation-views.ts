import type { EntityManager } from '@mikro-orm/core';
import type { HoistConfig } from '../../config/schema.js';
import { Build } from '../entities/build.js';
import { Deployment } from '../entities/deployment.js';
import { Operation } from '../entities/operation.js';
import { Project } from '../entities/project.js';
import { Version } from '../entities/version.js';
import { notFound } from '../errors.js';
import { isMaybeStuck, recommendedNextStep, type NextStep } from '../operations/guidance.js';
import { STAGES, type OperationState, type Stage } from '../operations/state-machine.js';
import type { Clock } from '../ports/clock.js';
import type { Queue } from '../ports/queue.js';
import { analysisView } from './analysis-view.js';
import { STAGE_TOPIC, stageJobKey } from './operation-store.js';

export const OPERATION_VIEWS = Symbol.for('hoist.OperationViews');

const iso = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString() : null);

/** Why a stage was done without running: reused by a redeploy (the build it ships), or Build left out by skip_build. */
const skipReason = (stage: Stage, state: OperationState) =>
  state.buildId
    ? `reused: this deployment ships the existing build ${state.buildId}`
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

/** Reads operations for the API: child state, build-log context, queue information and guidance. */
export class OperationViews {
  constructor(
    private readonly em: EntityManager,
    private readonly queue: Queue,
    private readonly clock: Clock,
    private readonly config: HoistConfig,
  ) {}

  /** The account's operation with `id` (any kind), or not_found. */
  async get(accountId: string, id: string): Promise<OperationView> {
    const op = await this.em.findOne(Operation, { id, accountId });
    if (!op) throw notFound('Operation');
    return this.view(op);
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
      const done = ['succeeded', 'failed', 'canceled'].includes(op.status);
      return {
        ...base,
        attempt: 1,
        current_stage: null,
        stages: {},
        build_log: null,
        queue: null,
        maybe_stuck: false,
        next_step: done ? { action: 'none', message: `The operation ${op.status}.` } : { action: 'poll', message: `Poll GET /api/v1/operations/${op.id} every 2-10 s until its status is terminal.` },
        result: null,
      };
    }
    const state = op.state as unknown as OperationState;
    const threshold = this.config.stuckAfterSeconds * 1000;
    const version = op.versionId ? await this.em.findOne(Version, { id: op.versionId }) : null;
    // A redeploy builds nothing: its build is the one it ships.
    const build = state.buildId
      ? await this.em.findOne(Build, { id: state.buildId })
      : await this.em.findOne(Build, { operationId: op.id }, { orderBy: { createdAt: 'desc' } });
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
        ...(name === 'analyze' && version?.analysis ? { result: analysisView(version.analysis) } : {}),
      };
    }
    let queue: Record<string, unknown> | null = null;
    if (state.status === 'running' && state.current) {
      // The queue being unreachable (a NATS restart) leaves queue null rather than failing the view.
      const p = await this.queue.position(STAGE_TOPIC, stageJobKey({ operationId: op.id, stage: state.current, attempt: state.attempt })).catch(() => null);
      if (p) queue = { stage: state.current, state: p.state, jobs_ahead: p.jobsAhead, position: p.state === 'waiting' ? p.jobsAhead + 1 : 0, workers: p.workers };
    }
    let result: Record<string, unknown> | null = null;
    if (state.status === 'succeeded') {
      const d = await this.em.findOne(Deployment, { operationId: op.id, status: { $in: ['live', 'superseded'] } }, { orderBy: { createdAt: 'desc' } });
      const project = op.projectId ? await this.em.findOne(Project, { id: op.projectId }) : null;
      result = { url: d?.url ?? null, deployment_id: d?.id ?? null, build_id: build?.id ?? null, live: !!d && project?.liveDeploymentId === d.id };
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
}
