import { HoistError } from '../errors.js';

/**
 * The deployment operation state machine: pure, no I/O. A parent operation chains three stages,
 * analyze → build → deploy. Workers and routes call `transition` (or `createOperation`), persist the
 * returned state and carry out the returned effects in the same transaction. The two tables below
 * are the specification; `describeTransitions` prints them for the API documentation.
 */

/** The child stages, in the order they run. */
export const STAGES = ['analyze', 'build', 'deploy'] as const;
export type Stage = (typeof STAGES)[number];

/** Operation statuses of the spec; succeeded, failed and canceled are terminal. */
export type Status = 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled';
/** The parent is never `queued`: the spec has a fresh deployment report `running` at once. */
export type OperationStatus = Exclude<Status, 'queued'>;
/**
 * A stage may also be `skipped` (Build with skip_build, or a stage a redeploy reuses): done without running, and never
 * rerun.
 */
export type StageStatus = Status | 'skipped';

/**
 * Why a stage failed, as the operation stores and shows it (what is kept of a StageError); codes are
 * stable (`archive_*`, `analyze_*`, `build_*`, `deploy_*`, ...).
 */
export interface StageFailure {
  code: string;
  message: string;
}

/** One child stage. Times are ISO 8601 strings so the state survives a JSON column unchanged. */
export interface StageState {
  status: StageStatus;
  /** 0–100 within the stage; 100 only once it succeeded. */
  progress: number;
  startedAt: string | null;
  /** Last sign of life from the worker running it (start, progress or heartbeat). */
  heartbeatAt: string | null;
  finishedAt: string | null;
  error: StageFailure | null;
  /**
   * Fencing token of the current claim: each `stage_started` that claims the stage adds one, and a
   * stage event carrying another token is ignored. Absent until the stage is first claimed.
   */
  token?: number;
  /**
   * The holder handed its claim back (its worker stops, or its attempt failed unexpectedly): the next claim need not
   * wait for the lease.
   */
  released?: boolean;
}

/** The whole parent operation, as `transition` reads and returns it. */
export interface OperationState {
  status: OperationStatus;
  /** Integer 0–100; never decreases; 100 only when the operation succeeded. */
  progress: number;
  /** 1 for the first run; each retry adds one. Stage events carry it so stale deliveries are ignored. */
  attempt: number;
  /**
   * The first stage that is neither succeeded nor skipped (the failed or canceled one when terminal); null once all are
   * done.
   */
  current: Stage | null;
  stages: Record<Stage, StageState>;
  /** The failed stage's error while the operation is failed. */
  error: StageFailure | null;
  finishedAt: string | null;
  /** A redeploy's existing build, which Deploy ships instead of building; set by the caller, carried unchanged. */
  buildId?: string;
  /**
   * A promote's release (deployment id): Analyze and Build are skipped, and Deploy makes that release live
   * again from what the deployer kept; set by the caller, carried unchanged.
   */
  promote?: string;
  /**
   * Deploy to production even when the version was uploaded as a preview (a deploy hook building the live version
   * again, which may be a promoted preview's); set by the caller, carried unchanged.
   */
  production?: true;
}

/**
 * Reports from the worker running a stage; `attempt` is the one its job was enqueued for. `token` is
 * the fencing token the worker's claim got: an event with a token other than the stage's is a late
 * worker's and is ignored. Without a token (the queue giving up on a job) the event is not fenced.
 */
export type StageEvent =
  /** A claim: `leaseMs` is how long a running stage's last heartbeat keeps other claims off (0: none). */
  | { type: 'stage_started'; stage: Stage; attempt: number; leaseMs?: number }
  | { type: 'stage_progress'; stage: Stage; attempt: number; token?: number; /** 0–1 of this stage */ fraction: number }
  | { type: 'heartbeat'; stage: Stage; attempt: number; token?: number }
  /**
   * `inline`: the stage after it was done in the same claim, right after it (Build of a site that builds nothing):
   * it succeeds too, started and finished now, when it is queued.
   */
  | { type: 'stage_succeeded'; stage: Stage; attempt: number; token?: number; inline?: Stage }
  /**
   * The holder hands its claim back unfinished (its worker stops gracefully, or its attempt failed unexpectedly and the
   * queue delivers the job again).
   */
  | { type: 'stage_released'; stage: Stage; attempt: number; token?: number }
  /** Also what a dead-lettered job (too many deliveries, dropped) reports, even before it started. */
  | { type: 'stage_failed'; stage: Stage; attempt: number; token?: number; error: StageFailure };

/** Requests from the API. */
export type ParentEvent = { type: 'cancel_requested' } | { type: 'retry_requested' };
export type OperationEvent = StageEvent | ParentEvent;

/** What the caller must do after persisting the new state. */
export type Effect =
  /** Enqueue the stage's job (a key like `${operationId}:${stage}:${attempt}` makes a repeat harmless). */
  | { type: 'enqueue_stage'; stage: Stage; attempt: number }
  /** Tell the worker running this stage to stop. */
  | { type: 'stop_stage'; stage: Stage; attempt: number }
  /** The operation reached a terminal status: set finishedAt, free the project's chain, record results. */
  | { type: 'finish'; status: Exclude<OperationStatus, 'running'> };

/**
 * The answer of `transition`; `noop` says the state is unchanged (a duplicate or stale event; its effects may still
 * re-enqueue the next stage).
 */
export interface Transition {
  state: OperationState;
  effects: Effect[];
  noop: boolean;
}

/**
 * Where the event's stage stands: `next` is queued with every earlier stage succeeded or skipped; `waiting` is queued
 * behind an unfinished one.
 */
export type StagePosition = 'next' | 'waiting' | 'running' | 'done';

type StageRule = 'start' | 'restart' | 'heartbeat' | 'progress' | 'release' | 'succeed' | 'fail' | 'ignore' | 'reject';
type ParentRule = 'cancel' | 'retry' | 'not_cancelable' | 'not_retryable';

/** Stage events, by where their stage stands. Events of an earlier attempt are always `ignore`. */
export const STAGE_TABLE: Record<StagePosition, Record<StageEvent['type'], StageRule>> = {
  next: {
    stage_started: 'start',
    stage_progress: 'reject',
    heartbeat: 'reject',
    stage_released: 'reject',
    stage_succeeded: 'reject',
    stage_failed: 'fail',
  },
  waiting: {
    stage_started: 'reject',
    stage_progress: 'reject',
    heartbeat: 'reject',
    stage_released: 'reject',
    stage_succeeded: 'reject',
    stage_failed: 'reject',
  },
  running: {
    stage_started: 'restart',
    stage_progress: 'progress',
    heartbeat: 'heartbeat',
    stage_released: 'release',
    stage_succeeded: 'succeed',
    stage_failed: 'fail',
  },
  done: {
    stage_started: 'ignore',
    stage_progress: 'ignore',
    heartbeat: 'ignore',
    stage_released: 'ignore',
    stage_succeeded: 'ignore',
    stage_failed: 'ignore',
  },
};

/** Requests from the API, by parent status. */
export const PARENT_TABLE: Record<OperationStatus, Record<ParentEvent['type'], ParentRule>> = {
  running: { cancel_requested: 'cancel', retry_requested: 'not_retryable' },
  succeeded: { cancel_requested: 'not_cancelable', retry_requested: 'not_retryable' },
  failed: { cancel_requested: 'not_cancelable', retry_requested: 'retry' },
  canceled: { cancel_requested: 'not_cancelable', retry_requested: 'retry' },
};

/** The share of overall progress each stage covers: [from, to]. */
export const STAGE_PROGRESS: Record<Stage, [number, number]> = { analyze: [5, 15], build: [15, 70], deploy: [70, 100] };

const RULE_TEXT: Record<StageRule | ParentRule, string> = {
  start: '→ running; startedAt and heartbeatAt set; token + 1 (claimed)',
  restart:
    'a redelivered job: once the lease (leaseMs since the last heartbeat) lapsed or ' +
    'the holder released it, token + 1 and heartbeatAt refreshed, the stage runs ' +
    'again (stages are idempotent); while it holds, no-op',
  heartbeat: 'heartbeatAt refreshed',
  progress: 'stage progress raised (never lowered), heartbeatAt refreshed',
  release:
    "the holder's claim ends at once (its worker stops, or its attempt failed " +
    'unexpectedly): the redelivered job claims the stage without waiting for the ' +
    'lease',
  succeed:
    '→ succeeded; the next stage is enqueued, or the operation succeeds (progress 100). A queued Build that ' +
    'runs nothing (a plain static site) is done by the worker that ran Analyze, in the same write: it ' +
    'succeeds with Analyze, started and finished at once, and Deploy is enqueued',
  fail: '→ failed; later stages → canceled; the operation fails',
  ignore: 'no-op (already done)',
  reject: 'rejected: `conflict`',
  cancel: '→ canceled; the running stage is stopped; it and the queued stages → canceled',
  retry:
    '→ running, attempt + 1; failed and canceled stages → queued; resumes at the ' +
    'first of them, reusing finished stages',
  not_cancelable: 'rejected: `not_cancelable`',
  not_retryable: 'rejected: `not_retryable`',
};

const DONE: StageStatus[] = ['succeeded', 'skipped', 'failed', 'canceled'];
const TERMINAL: OperationStatus[] = ['succeeded', 'failed', 'canceled'];
const finished = (s: StageState) => s.status === 'succeeded' || s.status === 'skipped';
const freshStage = (): StageState => ({
  status: 'queued',
  progress: 0,
  startedAt: null,
  heartbeatAt: null,
  finishedAt: null,
  error: null,
});

/**
 * A new deployment: running, progress 5, Analyze enqueued; with `skipBuild` Build is `skipped` from
 * the start. Stages in `reuse` (a redeploy reuses `['analyze', 'build']`) are `skipped` too and the
 * first other stage is enqueued, with the progress of the stages before it; reusing every stage is
 * invalid_request.
 */
export function createOperation(now: Date, options: { skipBuild?: boolean; reuse?: Stage[] } = {}): Transition {
  const state: OperationState = {
    status: 'running',
    progress: 0,
    attempt: 1,
    current: 'analyze',
    stages: { analyze: freshStage(), build: freshStage(), deploy: freshStage() },
    error: null,
    finishedAt: null,
  };
  const skipped = new Set<Stage>([...(options.skipBuild ? ['build' as const] : []), ...(options.reuse ?? [])]);
  if (STAGES.every((name) => skipped.has(name)))
    throw new HoistError('invalid_request', 'A deployment must run at least one stage', { reuse: options.reuse });
  for (const name of skipped)
    state.stages[name] = { ...freshStage(), status: 'skipped', finishedAt: now.toISOString() };
  settle(state);
  return { state, effects: [{ type: 'enqueue_stage', stage: state.current!, attempt: 1 }], noop: false };
}

/** True once the operation is succeeded, failed or canceled. */
export const isTerminal = (state: { status: string }) => (TERMINAL as string[]).includes(state.status);
/** Whether `cancel_requested` would be accepted. */
export const canCancel = (state: OperationState) => PARENT_TABLE[state.status].cancel_requested === 'cancel';
/** Whether `retry_requested` would be accepted. */
export const canRetry = (state: OperationState) => PARENT_TABLE[state.status].retry_requested === 'retry';

/** Where `stage` stands in `state` (the row of STAGE_TABLE that applies). */
export function stagePosition(state: OperationState, stage: Stage): StagePosition {
  const { status } = state.stages[stage];
  if (status === 'running') return 'running';
  if (DONE.includes(status)) return 'done';
  return STAGES.slice(0, STAGES.indexOf(stage)).every((s) => finished(state.stages[s])) ? 'next' : 'waiting';
}

/**
 * Applies one event. Returns the new state (the input is not modified) and the effects to carry
 * out; throws HoistError `not_cancelable`, `not_retryable`, `conflict` (details.reason
 * `invalid_transition`) for an event the tables reject, or `invalid_request` for a malformed event.
 */
export function transition(state: OperationState, event: OperationEvent, now: Date): Transition {
  if (event.type === 'cancel_requested' || event.type === 'retry_requested') {
    const rule = PARENT_TABLE[state.status][event.type];
    if (rule === 'not_cancelable')
      throw new HoistError(
        'not_cancelable',
        `Only queued or running work can be canceled; this operation is ${state.status}`,
        { status: state.status },
      );
    if (rule === 'not_retryable')
      throw new HoistError(
        'not_retryable',
        `Only a failed or canceled operation can be retried; this operation is ${state.status}`,
        { status: state.status },
      );
    return apply(state, rule === 'cancel' ? cancel : retry, now);
  }
  checkWellFormed(event);
  if (event.attempt < state.attempt) return ignore(state);
  const position = stagePosition(state, event.stage);
  const rule = event.attempt > state.attempt ? 'reject' : STAGE_TABLE[position][event.type];
  if (rule === 'ignore' || fencedOff(state.stages[event.stage], event, rule, now)) return ignore(state);
  if (rule === 'reject') {
    throw new HoistError(
      'conflict',
      `${event.type} does not apply to the ${event.stage} stage while it is ${position} (attempt ${state.attempt})`,
      {
        reason: 'invalid_transition',
        event: event.type,
        stage: event.stage,
        position,
        attempt: state.attempt,
      },
    );
  }
  return apply(state, (s, at) => STAGE_STEPS[rule](s, event, at), now);
}

type Step = (s: OperationState, now: string) => Effect[];

const STAGE_STEPS: Record<
  Exclude<StageRule, 'ignore' | 'reject'>,
  (s: OperationState, e: StageEvent, now: string) => Effect[]
> = {
  start: (s, e, now) => {
    const stage = s.stages[e.stage];
    Object.assign(stage, { status: 'running', startedAt: now, heartbeatAt: now, token: (stage.token ?? 0) + 1 });
    return [];
  },
  restart: (s, e, now) => {
    const stage = s.stages[e.stage];
    Object.assign(stage, { heartbeatAt: now, token: (stage.token ?? 0) + 1 });
    delete stage.released;
    return [];
  },
  release: (s, e) => {
    s.stages[e.stage].released = true;
    return [];
  },
  heartbeat: (s, e, now) => {
    s.stages[e.stage].heartbeatAt = now;
    return [];
  },
  progress: (s, e, now) => {
    const stage = s.stages[e.stage];
    const percent = Math.min(99, Math.floor((e as { fraction: number }).fraction * 100));
    Object.assign(stage, { heartbeatAt: now, progress: Math.max(stage.progress, percent) });
    return [];
  },
  succeed: (s, e, now) => {
    Object.assign(s.stages[e.stage], { status: 'succeeded', progress: 100, finishedAt: now });
    const inline = (e as { inline?: Stage }).inline;
    if (inline && STAGES[STAGES.indexOf(e.stage) + 1] === inline && s.stages[inline].status === 'queued') {
      const stage = s.stages[inline];
      Object.assign(stage, { status: 'succeeded', progress: 100, startedAt: now, heartbeatAt: now, finishedAt: now });
      stage.token = (stage.token ?? 0) + 1;
    }
    const next = STAGES.find((name) => !finished(s.stages[name]));
    if (next) return [{ type: 'enqueue_stage', stage: next, attempt: s.attempt }];
    Object.assign(s, { status: 'succeeded', finishedAt: now });
    return [{ type: 'finish', status: 'succeeded' }];
  },
  fail: (s, e, now) => {
    const { code, message } = (e as { error: StageFailure }).error;
    Object.assign(s.stages[e.stage], { status: 'failed', finishedAt: now, error: { code, message } });
    for (const name of STAGES)
      if (s.stages[name].status === 'queued') Object.assign(s.stages[name], { status: 'canceled', finishedAt: now });
    Object.assign(s, { status: 'failed', error: { code, message }, finishedAt: now });
    return [{ type: 'finish', status: 'failed' }];
  },
};

const cancel: Step = (s, now) => {
  const effects: Effect[] = [];
  for (const name of STAGES) {
    const stage = s.stages[name];
    if (stage.status === 'running') effects.push({ type: 'stop_stage', stage: name, attempt: s.attempt });
    if (stage.status === 'running' || stage.status === 'queued')
      Object.assign(stage, { status: 'canceled', finishedAt: now });
  }
  Object.assign(s, { status: 'canceled', finishedAt: now });
  return [...effects, { type: 'finish', status: 'canceled' }];
};

const retry: Step = (s) => {
  for (const name of STAGES) if (!finished(s.stages[name])) s.stages[name] = freshStage();
  Object.assign(s, { status: 'running', attempt: s.attempt + 1, error: null, finishedAt: null });
  return [{ type: 'enqueue_stage', stage: STAGES.find((name) => !finished(s.stages[name]))!, attempt: s.attempt }];
};

/**
 * True when a running stage's event must not apply: a claim while the holder's lease (leaseMs since
 * its last heartbeat) has not lapsed and the holder did not release it, or a report carrying another
 * claim's token.
 */
function fencedOff(stage: StageState, e: StageEvent, rule: StageRule, now: Date): boolean {
  if (stage.status !== 'running') return false;
  if (e.type === 'stage_started')
    return rule === 'restart' && !stage.released && Date.parse(stage.heartbeatAt!) + (e.leaseMs ?? 0) > now.getTime();
  return e.token !== undefined && e.token !== (stage.token ?? 0);
}

function apply(state: OperationState, step: Step, now: Date): Transition {
  const next = structuredClone(state);
  const effects = step(next, now.toISOString());
  return { state: settle(next), effects, noop: false };
}

// A duplicate or stale event changes nothing, but if the chain stalled between persisting a stage's
// success and enqueueing the next one, the redelivered job moves it on (the queue key de-duplicates).
function ignore(state: OperationState): Transition {
  const c = state.current;
  const stalled = state.status === 'running' && c !== null && state.stages[c].status === 'queued';
  return { state, effects: stalled ? [{ type: 'enqueue_stage', stage: c, attempt: state.attempt }] : [], noop: true };
}

/** Recomputes `current` and `progress` (monotone, below 100 until success). */
function settle(s: OperationState): OperationState {
  s.current = STAGES.find((name) => !finished(s.stages[name])) ?? null;
  if (s.status === 'succeeded') s.progress = 100;
  else if (s.current) {
    const [from, to] = STAGE_PROGRESS[s.current];
    s.progress = Math.min(
      99,
      Math.max(s.progress, from + Math.floor(((to - from) * s.stages[s.current].progress) / 100)),
    );
  }
  return s;
}

function checkWellFormed(e: StageEvent) {
  const bad = (what: string) =>
    new HoistError('invalid_request', `Malformed ${e.type ?? 'operation'} event: ${what}`, { event: e.type });
  if (!Object.hasOwn(STAGE_TABLE.next, e.type)) throw bad('unknown event type');
  if (!STAGES.includes(e.stage)) throw bad('unknown stage');
  if (!Number.isInteger(e.attempt) || e.attempt < 1) throw bad('attempt must be a positive integer');
  if ('token' in e && e.token !== undefined && !(Number.isInteger(e.token) && e.token >= 0))
    throw bad('token must be a non-negative integer');
  if (e.type === 'stage_started' && e.leaseMs !== undefined && !(Number.isInteger(e.leaseMs) && e.leaseMs >= 0))
    throw bad('leaseMs must be a non-negative integer');
  if (e.type === 'stage_progress' && !(e.fraction >= 0 && e.fraction <= 1))
    throw bad('fraction must be between 0 and 1');
  if (e.type === 'stage_succeeded' && e.inline !== undefined && !STAGES.includes(e.inline)) throw bad('unknown stage');
  if (e.type === 'stage_failed' && !(typeof e.error?.code === 'string' && typeof e.error.message === 'string'))
    throw bad('error needs a code and a message');
}

/** Every transition as Markdown, generated from the tables (for the OpenAPI descriptions of the operation routes). */
export function describeTransitions(): string {
  const row = (cells: string[]) => `| ${cells.join(' | ')} |`;
  const stageEvents = Object.keys(STAGE_TABLE.next) as StageEvent['type'][];
  const weights = STAGES.map((s) => `${s} ${STAGE_PROGRESS[s].join('–')}`).join(', ');
  const positions: Record<StagePosition, string> = {
    next: 'queued, every earlier stage succeeded or skipped',
    waiting: 'queued behind an unfinished stage',
    running: 'running',
    done: 'succeeded, skipped, failed or canceled',
  };
  return [
    'A deployment is a parent operation chaining the stages analyze → build → deploy. ' +
      'A new one is `running` with progress 5 and Analyze enqueued; with skip_build the ' +
      'Build stage is skipped (done without running). ' +
      `A redeploy (retry of a deployment record) reuses an existing build: Analyze and ` +
      `Build are \`skipped\` from the start, Deploy is enqueued, and progress starts at ` +
      `${STAGE_PROGRESS.deploy[0]}. ` +
      'A promote (kind `promote`) is the same with Deploy making an earlier release live again from ' +
      'what the deployer kept, with no Analyze or Build. ' +
      'Statuses: queued, running, succeeded, failed, canceled (terminal: succeeded, ' +
      'failed, canceled); the operation itself is never queued. ' +
      'A skipped stage is shown as `succeeded` with `skipped: true` and a ' +
      '`skip_reason`; the tables below name it skipped, its state inside the machine.',
    '',
    row(['Operation status', 'cancel', 'retry']),
    row(['---', '---', '---']),
    ...(Object.keys(PARENT_TABLE) as OperationStatus[]).map((status) =>
      row([status, RULE_TEXT[PARENT_TABLE[status].cancel_requested], RULE_TEXT[PARENT_TABLE[status].retry_requested]]),
    ),
    '',
    'A retry is also refused with `deployment_in_progress` while another deployment ' +
      'of the same project is running: one chain per project.',
    '',
    row(['Stage is', ...stageEvents]),
    row(['---', ...stageEvents.map(() => '---')]),
    ...(Object.keys(STAGE_TABLE) as StagePosition[]).map((p) =>
      row([positions[p], ...stageEvents.map((e) => RULE_TEXT[STAGE_TABLE[p][e]])]),
    ),
    '',
    'Stage events carry the attempt they were enqueued for: those of an earlier ' +
      'attempt are ignored, those of a later one rejected. A rejected stage event has ' +
      'details.reason `invalid_transition`. ' +
      'Stages are fenced: a claim (`stage_started`) of a running stage succeeds only ' +
      'once the holder sent no heartbeat for the lease (the queue visibility timeout) ' +
      'or released it (`stage_released`, sent by a worker that stops gracefully or ' +
      'whose attempt failed unexpectedly, before the queue delivers the job again), and ' +
      "adds one to the stage's fencing token; " +
      'progress, heartbeat, success and failure carry the token of the claim they ' +
      'belong to, and those of an older claim are ignored, so a late worker can never ' +
      'overwrite a newer result or a cancel. ' +
      'A no-op event while the operation runs enqueues its queued next stage again, so ' +
      'a redelivered job moves a stalled chain on. ' +
      `Progress is an integer 0–100 weighted by stage (${weights}); ` +
      'it never decreases and is 100 only on success. ' +
      'An operation whose running stage has sent no heartbeat for longer than the threshold is flagged `maybe_stuck`.',
  ].join('\n');
}
