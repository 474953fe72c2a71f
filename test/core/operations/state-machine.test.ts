import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HoistError } from '../../../core/errors.js';
import {
  STAGES,
  canCancel,
  canRetry,
  createOperation,
  describeTransitions,
  isTerminal,
  transition,
  type Effect,
  type OperationEvent,
  type OperationState,
  type Stage,
  type StageEvent,
  type StageStatus,
} from '../../../core/operations/state-machine.js';

const t0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (seconds: number) => new Date(t0 + seconds * 1000);
const iso = (seconds: number) => at(seconds).toISOString();

// Event shorthands; `attempt` defaults to 1.
const started = (stage: Stage, attempt = 1): StageEvent => ({ type: 'stage_started', stage, attempt });
const progressed = (stage: Stage, fraction: number, attempt = 1): StageEvent => ({
  type: 'stage_progress',
  stage,
  attempt,
  fraction,
});
const beat = (stage: Stage, attempt = 1): StageEvent => ({ type: 'heartbeat', stage, attempt });
const succeeded = (stage: Stage, attempt = 1): StageEvent => ({ type: 'stage_succeeded', stage, attempt });
const failed = (stage: Stage, code = `${stage}_broke`, attempt = 1): StageEvent => ({
  type: 'stage_failed',
  stage,
  attempt,
  error: { code, message: `${stage} broke` },
});
const cancel: OperationEvent = { type: 'cancel_requested' };
const retry: OperationEvent = { type: 'retry_requested' };

/** Runs events one second apart from a fresh operation; returns the state and the last transition. */
function run(events: OperationEvent[], skipBuild = false, reuse?: Stage[]) {
  let last = createOperation(at(0), { skipBuild, reuse });
  events.forEach((e, i) => (last = transition(last.state, e, at(i + 1))));
  return last;
}

/** Calls `fn`, expecting a HoistError with `code`; returns it. */
function rejects(fn: () => unknown, code: string): HoistError {
  try {
    fn();
  } catch (err) {
    assert.instance(err, HoistError);
    assert.is((err as HoistError).code, code);
    return err as HoistError;
  }
  throw new assert.Assertion({
    message: `expected a ${code} rejection`,
    operator: 'rejects',
    expects: code,
    actual: 'no error',
    generated: false,
  });
}

const DONE: StageStatus[] = ['succeeded', 'skipped', 'failed', 'canceled'];
const finished = (st: StageStatus) => st === 'succeeded' || st === 'skipped';

/** Every invariant a state must keep, whatever happened before. */
function checkInvariants(s: OperationState, where: string) {
  const statuses = STAGES.map((n) => s.stages[n].status);
  const msg = (what: string) => `${where}: ${what} (${JSON.stringify(s)})`;
  assert.ok(Number.isInteger(s.progress) && s.progress >= 0 && s.progress <= 100, msg('progress is an integer 0–100'));
  assert.is(s.progress === 100, s.status === 'succeeded', msg('progress is 100 exactly when succeeded'));
  assert.is(
    s.current,
    STAGES.find((n) => !finished(s.stages[n].status)) ?? null,
    msg('current is the first unfinished stage'),
  );
  assert.is(
    isTerminal(s),
    statuses.every((st) => DONE.includes(st)),
    msg('terminal exactly when every stage is done'),
  );
  assert.is(s.finishedAt !== null, isTerminal(s), msg('finishedAt set exactly when terminal'));
  assert.ok(statuses.filter((st) => st === 'running').length <= 1, msg('at most one stage runs'));
  for (const n of STAGES)
    assert.is(
      s.stages[n].progress === 100,
      s.stages[n].status === 'succeeded',
      msg(`${n} progress 100 only on success`),
    );
  if (s.status === 'running') {
    assert.ok(
      !statuses.some((st) => st === 'failed' || st === 'canceled'),
      msg('a running operation has no failed or canceled stage'),
    );
    const running = STAGES.find((n) => s.stages[n].status === 'running');
    if (running) assert.is(running, s.current, msg('the running stage is current'));
    assert.is(s.error, null, msg('no error while running'));
  }
  if (s.status === 'succeeded') assert.is(s.current, null, msg('nothing current after success'));
  if (s.status === 'failed') {
    assert.equal(
      STAGES.filter((n) => s.stages[n].status === 'failed'),
      [s.current],
      msg('exactly the current stage failed'),
    );
    assert.equal(s.error, s.stages[s.current!].error, msg('the operation carries the stage error'));
  }
  if (s.status === 'canceled') {
    assert.ok(
      statuses.includes('canceled') && !statuses.includes('failed'),
      msg('canceled has canceled stages and no failed one'),
    );
    assert.is(s.error, null, msg('no error when canceled'));
  }
}

// ---- Situations: every parent status and every child configuration reachable ----

const situations: Record<string, { events: OperationEvent[]; skipBuild?: boolean; reuse?: Stage[] }> = {
  fresh: { events: [] },
  'fresh, skip_build': { events: [], skipBuild: true },
  'analyze running': { events: [started('analyze'), progressed('analyze', 0.4)] },
  'build next': { events: [started('analyze'), succeeded('analyze')] },
  'build running': { events: [started('analyze'), succeeded('analyze'), started('build'), progressed('build', 0.3)] },
  'deploy next': { events: [started('analyze'), succeeded('analyze'), started('build'), succeeded('build')] },
  'deploy next, build skipped': { events: [started('analyze'), succeeded('analyze')], skipBuild: true },
  'deploy running': {
    events: [started('analyze'), succeeded('analyze'), started('build'), succeeded('build'), started('deploy')],
  },
  succeeded: {
    events: [
      started('analyze'),
      succeeded('analyze'),
      started('build'),
      succeeded('build'),
      started('deploy'),
      succeeded('deploy'),
    ],
  },
  'succeeded, build skipped': {
    events: [started('analyze'), succeeded('analyze'), started('deploy'), succeeded('deploy')],
    skipBuild: true,
  },
  'failed in analyze': { events: [started('analyze'), failed('analyze', 'archive_bad_zip')] },
  'failed before analyze started (dead letter)': { events: [failed('analyze', 'stage_gave_up')] },
  'failed in build': { events: [started('analyze'), succeeded('analyze'), started('build'), failed('build')] },
  'failed in deploy, build skipped': {
    events: [started('analyze'), succeeded('analyze'), started('deploy'), failed('deploy')],
    skipBuild: true,
  },
  'canceled while analyze queued': { events: [cancel] },
  'canceled while build running': { events: [started('analyze'), succeeded('analyze'), started('build'), cancel] },
  'canceled while deploy running': {
    events: [started('analyze'), succeeded('analyze'), started('build'), succeeded('build'), started('deploy'), cancel],
  },
  'retried after build failed (attempt 2, build next)': {
    events: [started('analyze'), succeeded('analyze'), started('build'), failed('build'), retry],
  },
  'retried after cancel (attempt 2, build running)': {
    events: [started('analyze'), succeeded('analyze'), started('build'), cancel, retry, started('build', 2)],
  },
  'failed again on attempt 2': {
    events: [
      started('analyze'),
      failed('analyze'),
      retry,
      started('analyze', 2),
      failed('analyze', 'analyze_no_runtime', 2),
    ],
  },
  'canceled on attempt 2 while analyze queued': { events: [cancel, retry, cancel] },
  'fresh redeploy (analyze and build reused)': { events: [], reuse: ['analyze', 'build'] },
  'redeploy running': { events: [started('deploy'), progressed('deploy', 0.5)], reuse: ['analyze', 'build'] },
  'redeploy succeeded': { events: [started('deploy'), succeeded('deploy')], reuse: ['analyze', 'build'] },
  'redeploy failed': { events: [started('deploy'), failed('deploy')], reuse: ['analyze', 'build'] },
  'redeploy canceled, then retried': { events: [cancel, retry], reuse: ['analyze', 'build'] },
  'analyze reused, build running': { events: [started('build')], reuse: ['analyze'] },
};

// The specification, written out independently of the module's tables.
type Position = 'next' | 'waiting' | 'running' | 'done';
const EXPECT_STAGE: Record<Position, Record<StageEvent['type'], string>> = {
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
const EXPECT_PARENT: Record<OperationState['status'], { cancel_requested: boolean; retry_requested: boolean }> = {
  running: { cancel_requested: true, retry_requested: false },
  succeeded: { cancel_requested: false, retry_requested: false },
  failed: { cancel_requested: false, retry_requested: true },
  canceled: { cancel_requested: false, retry_requested: true },
};

function positionOf(s: OperationState, stage: Stage): Position {
  const st = s.stages[stage].status;
  if (st === 'running') return 'running';
  if (DONE.includes(st)) return 'done';
  return STAGES.slice(0, STAGES.indexOf(stage)).every((n) => finished(s.stages[n].status)) ? 'next' : 'waiting';
}

const eventsFor = (stage: Stage, attempt: number): StageEvent[] => [
  { type: 'stage_started', stage, attempt },
  { type: 'stage_progress', stage, attempt, fraction: 0.5 },
  { type: 'heartbeat', stage, attempt },
  { type: 'stage_released', stage, attempt },
  { type: 'stage_succeeded', stage, attempt },
  { type: 'stage_failed', stage, attempt, error: { code: 'build_oops', message: 'oops' } },
];

const seenStage = new Set<string>();
const seenParent = new Set<string>();
const seenStatuses = new Set<string>();

for (const [name, { events, skipBuild, reuse }] of Object.entries(situations)) {
  test(`every event in situation: ${name}`, () => {
    const s = run(events, skipBuild, reuse).state;
    checkInvariants(s, name);
    seenStatuses.add(s.status);
    const snapshot = structuredClone(s);
    const now = at(1000);
    const nowIso = now.toISOString();

    for (const stage of STAGES) {
      const pos = positionOf(s, stage);
      for (const e of eventsFor(stage, s.attempt)) {
        const rule = EXPECT_STAGE[pos][e.type];
        const where = `${name} / ${e.type}(${stage}) at ${pos}`;
        seenStage.add(`${pos}:${e.type}`);
        if (rule === 'reject') {
          const err = rejects(() => transition(s, e, now), 'conflict');
          assert.is(err.details.reason, 'invalid_transition', where);
          assert.equal(s, snapshot, `${where}: a rejection changes nothing`);
          continue;
        }
        const r = transition(s, e, now);
        assert.equal(s, snapshot, `${where}: the input state is not modified`);
        checkInvariants(r.state, where);
        assert.ok(r.state.progress >= s.progress, `${where}: progress never decreases`);
        const before = s.stages[stage];
        const after = r.state.stages[stage];
        const others = (changed: Stage[]) =>
          STAGES.filter((n) => !changed.includes(n)).forEach((n) =>
            assert.equal(r.state.stages[n], s.stages[n], `${where}: ${n} unchanged`),
          );
        if (rule === 'ignore') {
          assert.ok(r.noop, where);
          assert.is(r.state, s, where);
          const stalled = s.status === 'running' && s.stages[s.current!].status === 'queued';
          assert.equal(
            r.effects,
            stalled ? [{ type: 'enqueue_stage', stage: s.current, attempt: s.attempt }] : [],
            `${where}: a duplicate moves a stalled chain on`,
          );
          continue;
        }
        assert.not.ok(r.noop, where);
        assert.is(r.state.attempt, s.attempt, where);
        if (rule === 'start') {
          assert.equal(
            after,
            { ...before, status: 'running', startedAt: nowIso, heartbeatAt: nowIso, token: (before.token ?? 0) + 1 },
            where,
          );
          assert.equal(r.effects, [], where);
          assert.is(r.state.status, 'running', where);
          others([stage]);
        } else if (rule === 'restart' || rule === 'heartbeat') {
          assert.equal(
            after,
            { ...before, heartbeatAt: nowIso, ...(rule === 'restart' ? { token: (before.token ?? 0) + 1 } : {}) },
            where,
          );
          assert.equal(r.effects, [], where);
          assert.is(r.state.progress, s.progress, where);
          others([stage]);
        } else if (rule === 'release') {
          assert.equal(after, { ...before, released: true }, where);
          assert.equal([r.effects, r.state.progress], [[], s.progress], where);
          others([stage]);
        } else if (rule === 'progress') {
          assert.equal(after, { ...before, heartbeatAt: nowIso, progress: Math.max(before.progress, 50) }, where);
          assert.equal(r.effects, [], where);
          others([stage]);
        } else if (rule === 'succeed') {
          assert.equal(after, { ...before, status: 'succeeded', progress: 100, finishedAt: nowIso }, where);
          const next = STAGES.slice(STAGES.indexOf(stage) + 1).find((n) => !finished(s.stages[n].status));
          if (next) {
            assert.is(r.state.status, 'running', where);
            assert.equal(r.effects, [{ type: 'enqueue_stage', stage: next, attempt: s.attempt }], where);
          } else {
            assert.equal([r.state.status, r.state.progress, r.state.finishedAt], ['succeeded', 100, nowIso], where);
            assert.equal(r.effects, [{ type: 'finish', status: 'succeeded' }], where);
          }
          others([stage]);
        } else if (rule === 'fail') {
          assert.equal(
            after,
            { ...before, status: 'failed', finishedAt: nowIso, error: { code: 'build_oops', message: 'oops' } },
            where,
          );
          assert.equal([r.state.status, r.state.error, r.state.progress], ['failed', after.error, s.progress], where);
          assert.equal(r.effects, [{ type: 'finish', status: 'failed' }], where);
          for (const n of STAGES.slice(STAGES.indexOf(stage) + 1)) {
            const was = s.stages[n];
            assert.equal(
              r.state.stages[n],
              was.status === 'queued' ? { ...was, status: 'canceled', finishedAt: nowIso } : was,
              `${where}: later ${n}`,
            );
          }
        } else assert.unreachable(`${where}: unknown rule ${rule}`);
      }
      // Stale attempts are ignored; attempts that do not exist yet are rejected.
      if (s.attempt > 1)
        for (const e of eventsFor(stage, s.attempt - 1))
          assert.ok(transition(s, e, now).noop, `${name}: stale ${e.type}(${stage})`);
      for (const e of eventsFor(stage, s.attempt + 1))
        assert.is(rejects(() => transition(s, e, now), 'conflict').details.reason, 'invalid_transition');
    }

    // Parent events.
    seenParent.add(`${s.status}:cancel`);
    if (EXPECT_PARENT[s.status].cancel_requested) {
      const r = transition(s, cancel, now);
      checkInvariants(r.state, `${name} / cancel`);
      const running = STAGES.find((n) => s.stages[n].status === 'running');
      assert.equal(
        r.effects,
        [
          ...(running ? [{ type: 'stop_stage', stage: running, attempt: s.attempt }] : []),
          { type: 'finish', status: 'canceled' },
        ] as Effect[],
        name,
      );
      assert.equal(
        [r.state.status, r.state.progress, r.state.attempt, r.state.finishedAt],
        ['canceled', s.progress, s.attempt, nowIso],
        name,
      );
      for (const n of STAGES) {
        const was = s.stages[n];
        const expected =
          was.status === 'queued' || was.status === 'running'
            ? { ...was, status: 'canceled', finishedAt: nowIso }
            : was;
        assert.equal(r.state.stages[n], expected, `${name} / cancel: ${n}`);
      }
      assert.ok(canCancel(s));
    } else {
      const err = rejects(() => transition(s, cancel, now), 'not_cancelable');
      assert.equal(err.details, { status: s.status });
      assert.not.ok(canCancel(s));
    }
    seenParent.add(`${s.status}:retry`);
    if (EXPECT_PARENT[s.status].retry_requested) {
      const r = transition(s, retry, now);
      checkInvariants(r.state, `${name} / retry`);
      assert.equal(
        [r.state.status, r.state.attempt, r.state.error, r.state.finishedAt, r.state.progress],
        ['running', s.attempt + 1, null, null, s.progress],
        name,
      );
      const resume = STAGES.find((n) => !finished(s.stages[n].status))!;
      assert.equal(r.effects, [{ type: 'enqueue_stage', stage: resume, attempt: s.attempt + 1 }], name);
      for (const n of STAGES) {
        const was = s.stages[n];
        const expected = finished(was.status)
          ? was
          : { status: 'queued', progress: 0, startedAt: null, heartbeatAt: null, finishedAt: null, error: null };
        assert.equal(r.state.stages[n], expected, `${name} / retry keeps finished stages: ${n}`);
      }
      assert.ok(canRetry(s));
    } else {
      const err = rejects(() => transition(s, retry, now), 'not_retryable');
      assert.equal(err.details, { status: s.status });
      assert.not.ok(canRetry(s));
    }
    assert.equal(s, snapshot, `${name}: nothing above modified the input`);
  });
}

test('the situations cover every pair of (stage position, event) and (parent status, request)', () => {
  for (const pos of Object.keys(EXPECT_STAGE))
    for (const type of Object.keys(EXPECT_STAGE.next)) assert.ok(seenStage.has(`${pos}:${type}`), `${pos}:${type}`);
  for (const status of Object.keys(EXPECT_PARENT)) {
    assert.ok(seenStatuses.has(status), status);
    for (const req of ['cancel', 'retry']) assert.ok(seenParent.has(`${status}:${req}`), `${status}:${req}`);
  }
});

// ---- Scenarios ----

test('a fresh deployment is running with progress 5 and enqueues Analyze', () => {
  const r = createOperation(at(0));
  assert.equal(r.effects, [{ type: 'enqueue_stage', stage: 'analyze', attempt: 1 }]);
  assert.equal(
    [r.state.status, r.state.progress, r.state.attempt, r.state.current, r.state.error, r.state.finishedAt],
    ['running', 5, 1, 'analyze', null, null],
  );
  for (const n of STAGES)
    assert.equal(r.state.stages[n], {
      status: 'queued',
      progress: 0,
      startedAt: null,
      heartbeatAt: null,
      finishedAt: null,
      error: null,
    });
  assert.is(
    JSON.stringify(JSON.parse(JSON.stringify(r.state))),
    JSON.stringify(r.state),
    'the state survives a JSON column',
  );
});

test('the happy path moves progress through the stage weights to 100', () => {
  const events = [
    started('analyze'),
    progressed('analyze', 0.5),
    succeeded('analyze'),
    started('build'),
    progressed('build', 0.5),
    succeeded('build'),
    started('deploy'),
    progressed('deploy', 1),
    succeeded('deploy'),
  ];
  let r = createOperation(at(0));
  const seen = [r.state.progress];
  const effects: Effect[][] = [];
  events.forEach((e, i) => {
    r = transition(r.state, e, at(i + 1));
    seen.push(r.state.progress);
    effects.push(r.effects);
  });
  assert.equal(seen, [5, 5, 10, 15, 15, 42, 70, 70, 99, 100]);
  assert.equal(effects.flat(), [
    { type: 'enqueue_stage', stage: 'build', attempt: 1 },
    { type: 'enqueue_stage', stage: 'deploy', attempt: 1 },
    { type: 'finish', status: 'succeeded' },
  ]);
  assert.equal([r.state.status, r.state.current, r.state.finishedAt], ['succeeded', null, iso(9)]);
  assert.equal(r.state.stages.build, {
    status: 'succeeded',
    progress: 100,
    startedAt: iso(4),
    heartbeatAt: iso(5),
    finishedAt: iso(6),
    error: null,
    token: 1,
  });
});

test('skip_build: Build is skipped from the start and Analyze hands over to Deploy', () => {
  const fresh = createOperation(at(0), { skipBuild: true });
  assert.equal(fresh.state.stages.build, {
    status: 'skipped',
    progress: 0,
    startedAt: null,
    heartbeatAt: null,
    finishedAt: iso(0),
    error: null,
  });
  assert.is(fresh.state.progress, 5);
  const r = run([started('analyze'), succeeded('analyze')], true);
  assert.equal(r.effects, [{ type: 'enqueue_stage', stage: 'deploy', attempt: 1 }]);
  assert.equal([r.state.current, r.state.progress], ['deploy', 70]);
  const skippedBuild = run([started('analyze'), succeeded('analyze'), started('build')], true);
  assert.ok(skippedBuild.noop, 'a skipped stage is done: its events are no-ops');
  assert.is(skippedBuild.state.stages.build.status, 'skipped');
});

test('a stage done inline succeeds with the one before it, started and finished then; the next is enqueued', () => {
  const inline: StageEvent = { type: 'stage_succeeded', stage: 'analyze', attempt: 1, token: 1, inline: 'build' };
  const r = run([started('analyze'), inline]);
  assert.not.ok(r.noop);
  assert.equal(r.state.stages.build, {
    status: 'succeeded',
    progress: 100,
    startedAt: iso(2),
    heartbeatAt: iso(2),
    finishedAt: iso(2),
    error: null,
    token: 1,
  });
  assert.is(r.state.stages.analyze.finishedAt, iso(2));
  assert.equal(r.effects, [{ type: 'enqueue_stage', stage: 'deploy', attempt: 1 }]);
  assert.equal([r.state.current, r.state.progress], ['deploy', 70]);
  // A Build that is not queued (skip_build) stays as it was; a stage that does not come next is not done inline.
  const skipped = run([started('analyze'), inline], true);
  assert.is(skipped.state.stages.build.status, 'skipped');
  assert.equal(skipped.effects, [{ type: 'enqueue_stage', stage: 'deploy', attempt: 1 }]);
  const notNext = run([started('analyze'), { ...inline, inline: 'deploy' } as StageEvent]);
  assert.equal([notNext.state.stages.build.status, notNext.state.stages.deploy.status], ['queued', 'queued']);
  assert.equal(notNext.effects, [{ type: 'enqueue_stage', stage: 'build', attempt: 1 }]);
  // Of a claim that lapsed (another token), nothing applies: neither the stage nor the one inline.
  const late = run([started('analyze'), { ...inline, token: 7 } as StageEvent]);
  assert.ok(late.noop);
  assert.equal([late.state.stages.analyze.status, late.state.stages.build.status], ['running', 'queued']);
});

test('a redeploy reuses Analyze and Build: both skipped from the start, Deploy enqueued at progress 70', () => {
  const fresh = createOperation(at(0), { reuse: ['analyze', 'build'] });
  assert.equal(fresh.effects, [{ type: 'enqueue_stage', stage: 'deploy', attempt: 1 }]);
  for (const n of ['analyze', 'build'] as const) {
    assert.equal(fresh.state.stages[n], {
      status: 'skipped',
      progress: 0,
      startedAt: null,
      heartbeatAt: null,
      finishedAt: iso(0),
      error: null,
    });
  }
  assert.equal([fresh.state.status, fresh.state.current, fresh.state.progress], ['running', 'deploy', 70]);
  checkInvariants(fresh.state, 'fresh redeploy');
  // Jobs of the reused stages are no-ops; Deploy runs as usual.
  assert.ok(transition(fresh.state, started('build'), at(1)).noop);
  const done = run([started('deploy'), progressed('deploy', 0.5), succeeded('deploy')], false, ['analyze', 'build']);
  assert.equal(
    [done.state.status, done.state.progress, done.effects],
    ['succeeded', 100, [{ type: 'finish', status: 'succeeded' }]],
  );
  assert.equal(done.state.stages.build.status, 'skipped');
});

test('reusing only Analyze enqueues Build at progress 15; skip_build plus reused Analyze enqueues Deploy', () => {
  const r = createOperation(at(0), { reuse: ['analyze'] });
  assert.equal(
    [r.effects, r.state.current, r.state.progress],
    [[{ type: 'enqueue_stage', stage: 'build', attempt: 1 }], 'build', 15],
  );
  const both = createOperation(at(0), { reuse: ['analyze'], skipBuild: true });
  assert.equal(
    [both.effects, both.state.current, both.state.progress],
    [[{ type: 'enqueue_stage', stage: 'deploy', attempt: 1 }], 'deploy', 70],
  );
});

test('reusing every stage is invalid_request', () => {
  rejects(() => createOperation(at(0), { reuse: ['analyze', 'build', 'deploy'] }), 'invalid_request');
  rejects(() => createOperation(at(0), { reuse: ['analyze', 'deploy'], skipBuild: true }), 'invalid_request');
});

test("the caller's buildId is carried unchanged through every transition, cancel and retry included", () => {
  let s: OperationState = { ...createOperation(at(0), { reuse: ['analyze', 'build'] }).state, buildId: 'b-1' };
  for (const [i, e] of [
    started('deploy'),
    beat('deploy'),
    progressed('deploy', 0.3),
    cancel,
    retry,
    started('deploy', 2),
    failed('deploy', 'deploy_x', 2),
    retry,
  ].entries()) {
    s = transition(s, e, at(i + 1)).state;
    assert.is(s.buildId, 'b-1', e.type);
  }
  assert.equal(
    [s.status, s.attempt, s.current, s.stages.analyze.status, s.stages.build.status],
    ['running', 3, 'deploy', 'skipped', 'skipped'],
  );
  assert.is(JSON.parse(JSON.stringify(s)).buildId, 'b-1', 'it survives a JSON column');
});

test('retry resumes at the stage that did not finish and reuses finished stages', () => {
  const failedBuild = run([
    started('analyze'),
    succeeded('analyze'),
    started('build'),
    progressed('build', 0.8),
    failed('build', 'build_command_failed'),
  ]).state;
  assert.equal(
    [failedBuild.status, failedBuild.progress, failedBuild.error],
    ['failed', 59, { code: 'build_command_failed', message: 'build broke' }],
  );
  assert.is(failedBuild.stages.deploy.status, 'canceled');
  const r = transition(failedBuild, retry, at(10));
  assert.equal(r.effects, [{ type: 'enqueue_stage', stage: 'build', attempt: 2 }]);
  assert.equal(r.state.stages.analyze, failedBuild.stages.analyze);
  assert.equal(
    [
      r.state.status,
      r.state.attempt,
      r.state.current,
      r.state.progress,
      r.state.stages.build.status,
      r.state.stages.deploy.status,
    ],
    ['running', 2, 'build', 59, 'queued', 'queued'],
  );
  // The rerun's early progress does not move the operation back; the old attempt's reports are ignored.
  let s = transition(r.state, started('build', 2), at(11)).state;
  s = transition(s, progressed('build', 0.1, 2), at(12)).state;
  assert.is(s.progress, 59);
  const stale = transition(s, succeeded('build', 1), at(13));
  assert.ok(stale.noop);
  assert.equal(stale.effects, []);
  for (const e of [succeeded('build', 2), started('deploy', 2), succeeded('deploy', 2)])
    s = transition(s, e, at(14)).state;
  assert.equal([s.status, s.progress, s.attempt], ['succeeded', 100, 2]);
  rejects(() => transition(s, retry, at(15)), 'not_retryable');
});

test('retry after a cancel during Deploy keeps Analyze and Build', () => {
  const canceled = run([
    started('analyze'),
    succeeded('analyze'),
    started('build'),
    succeeded('build'),
    started('deploy'),
    progressed('deploy', 0.5),
    cancel,
  ]);
  assert.equal(canceled.effects, [
    { type: 'stop_stage', stage: 'deploy', attempt: 1 },
    { type: 'finish', status: 'canceled' },
  ]);
  assert.equal([canceled.state.status, canceled.state.progress], ['canceled', 85]);
  const r = transition(canceled.state, retry, at(20));
  assert.equal(r.effects, [{ type: 'enqueue_stage', stage: 'deploy', attempt: 2 }]);
  assert.equal(r.state.stages.analyze, canceled.state.stages.analyze);
  assert.equal(r.state.stages.build, canceled.state.stages.build);
  // The stopped process reporting late changes nothing.
  assert.ok(transition(r.state, failed('deploy', 'deploy_killed', 1), at(21)).noop);
});

test('cancel before any stage started stops nothing; a second cancel or retry is refused', () => {
  const r = run([cancel]);
  assert.equal(r.effects, [{ type: 'finish', status: 'canceled' }]);
  for (const n of STAGES) assert.is(r.state.stages[n].status, 'canceled');
  rejects(() => transition(r.state, cancel, at(5)), 'not_cancelable');
  const again = transition(r.state, retry, at(5)).state;
  rejects(() => transition(again, retry, at(6)), 'not_retryable');
  // The Analyze job still in the queue finds its stage canceled and does nothing.
  const late = transition(r.state, started('analyze'), at(7));
  assert.ok(late.noop);
  assert.equal(late.effects, []);
});

test('duplicate events are no-ops; a redelivered job of a finished stage moves a stalled chain on', () => {
  const s = run([started('analyze'), succeeded('analyze')]).state;
  for (const e of [
    started('analyze'),
    beat('analyze'),
    progressed('analyze', 0.2),
    succeeded('analyze'),
    failed('analyze'),
  ]) {
    const r = transition(s, e, at(50));
    assert.ok(r.noop, e.type);
    assert.is(r.state, s);
    assert.equal(r.effects, [{ type: 'enqueue_stage', stage: 'build', attempt: 1 }], e.type);
  }
  const building = transition(s, started('build'), at(51)).state;
  assert.equal(
    transition(building, succeeded('analyze'), at(52)).effects,
    [],
    'nothing to move on while the next stage runs',
  );
  const restarted = transition(building, started('build'), at(60));
  assert.not.ok(restarted.noop);
  assert.equal(
    restarted.state.stages.build,
    { ...building.stages.build, heartbeatAt: iso(60), token: 2 },
    'a redelivered running stage keeps its start time',
  );
});

test('a stage that gave up before it started fails the operation', () => {
  const r = run([started('analyze'), succeeded('analyze'), failed('build', 'stage_gave_up')]);
  assert.equal(
    [r.state.status, r.state.current, r.state.stages.build.startedAt, r.state.stages.deploy.status],
    ['failed', 'build', null, 'canceled'],
  );
  assert.equal(r.effects, [{ type: 'finish', status: 'failed' }]);
});

test(
  "fencing: a claim waits out the holder's lease and takes a new token; an older " + "token's reports change nothing",
  () => {
    const claim = (stage: Stage, leaseMs: number): StageEvent => ({
      type: 'stage_started',
      stage,
      attempt: 1,
      leaseMs,
    });
    const first = transition(createOperation(at(0)).state, claim('analyze', 10_000), at(1)).state;
    assert.is(first.stages.analyze.token, 1);
    const held = transition(first, claim('analyze', 10_000), at(5));
    assert.ok(held.noop, "the holder's lease has not lapsed");
    assert.equal(held.effects, []);
    const beaten = transition(first, { type: 'heartbeat', stage: 'analyze', attempt: 1, token: 1 }, at(9)).state;
    assert.ok(transition(beaten, claim('analyze', 10_000), at(15)).noop, 'a heartbeat extends the lease');
    const second = transition(beaten, claim('analyze', 10_000), at(19));
    assert.not.ok(second.noop, 'the lease lapsed: the stage is claimed again');
    assert.equal([second.state.stages.analyze.token, second.state.stages.analyze.startedAt], [2, iso(1)]);
    const s = second.state;
    for (const late of [
      { type: 'heartbeat', stage: 'analyze', attempt: 1, token: 1 },
      { type: 'stage_progress', stage: 'analyze', attempt: 1, token: 1, fraction: 0.9 },
      { type: 'stage_succeeded', stage: 'analyze', attempt: 1, token: 1 },
      {
        type: 'stage_failed',
        stage: 'analyze',
        attempt: 1,
        token: 1,
        error: { code: 'analyze_late', message: 'late' },
      },
    ] as StageEvent[]) {
      const r = transition(s, late, at(20));
      assert.ok(r.noop, `${late.type} of token 1 is fenced off`);
      assert.is(r.state, s);
    }
    const done = transition(s, { type: 'stage_succeeded', stage: 'analyze', attempt: 1, token: 2 }, at(21)).state;
    assert.is(done.stages.analyze.status, 'succeeded');
    assert.ok(
      transition(
        done,
        { type: 'stage_failed', stage: 'analyze', attempt: 1, token: 1, error: { code: 'x_y', message: 'late' } },
        at(22),
      ).noop,
    );
    const canceled = transition(s, cancel, at(21)).state;
    assert.ok(
      transition(canceled, { type: 'stage_succeeded', stage: 'analyze', attempt: 1, token: 2 }, at(22)).noop,
      'a cancel wins over a later success',
    );
    const gaveUp = transition(s, failed('analyze', 'analyze_internal_error'), at(22)).state;
    assert.is(gaveUp.status, 'failed', 'the queue giving up (no token) is not fenced');
  },
);

test('a released claim is taken at once, under a new token; a release of an older token changes nothing', () => {
  const claim: StageEvent = { type: 'stage_started', stage: 'build', attempt: 1, leaseMs: 60_000 };
  const held = transition(run([started('analyze'), succeeded('analyze')]).state, claim, at(1)).state;
  assert.ok(transition(held, claim, at(2)).noop, 'held: the lease has not lapsed');
  const released = transition(held, { type: 'stage_released', stage: 'build', attempt: 1, token: 1 }, at(3)).state;
  assert.is(released.stages.build.released, true);
  const taken = transition(released, claim, at(4));
  assert.not.ok(taken.noop, 'released: claimed without waiting for the lease');
  assert.equal(
    [taken.state.stages.build.token, taken.state.stages.build.released, taken.state.stages.build.heartbeatAt],
    [2, undefined, iso(4)],
  );
  const late = transition(taken.state, { type: 'stage_released', stage: 'build', attempt: 1, token: 1 }, at(5));
  assert.ok(late.noop, 'the old holder cannot release the new claim');
  assert.ok(transition(taken.state, claim, at(6)).noop, 'the new claim holds its lease');
});

test('out-of-order events are rejected as invalid transitions', () => {
  const fresh = createOperation(at(0)).state;
  const err = rejects(() => transition(fresh, started('deploy'), at(1)), 'conflict');
  assert.equal(err.details, {
    reason: 'invalid_transition',
    event: 'stage_started',
    stage: 'deploy',
    position: 'waiting',
    attempt: 1,
  });
  rejects(() => transition(fresh, succeeded('analyze'), at(1)), 'conflict');
  rejects(() => transition(fresh, beat('analyze'), at(1)), 'conflict');
});

test('malformed events are invalid_request and change nothing', () => {
  const s = run([started('analyze')]).state;
  const snapshot = structuredClone(s);
  const bad = [
    progressed('analyze', 1.5),
    progressed('analyze', -0.1),
    progressed('analyze', Number.NaN),
    { type: 'stage_progress', stage: 'analyze', attempt: 1 },
    started('analyze', 0),
    started('analyze', 1.5),
    { type: 'stage_started', stage: 'publish', attempt: 1 },
    { type: 'stage_exploded', stage: 'analyze', attempt: 1 },
    { type: 'toString', stage: 'analyze', attempt: 1 },
    { type: 'stage_failed', stage: 'analyze', attempt: 1 },
    { type: 'stage_failed', stage: 'analyze', attempt: 1, error: { code: 42, message: 'x' } },
    { type: 'heartbeat', stage: 'analyze', attempt: 1, token: -1 },
    { type: 'stage_succeeded', stage: 'analyze', attempt: 1, token: '1' },
    { type: 'stage_started', stage: 'analyze', attempt: 1, leaseMs: 1.5 },
    { type: 'stage_succeeded', stage: 'analyze', attempt: 1, inline: 'publish' },
  ] as unknown as OperationEvent[];
  for (const e of bad) rejects(() => transition(s, e, at(2)), 'invalid_request');
  assert.equal(s, snapshot);
});

test('isTerminal, canCancel and canRetry by status', () => {
  const byStatus = {
    running: run([started('analyze')]).state,
    succeeded: run(situations.succeeded.events).state,
    failed: run([failed('analyze')]).state,
    canceled: run([cancel]).state,
  };
  assert.equal(
    Object.values(byStatus).map((s) => [s.status, isTerminal(s), canCancel(s), canRetry(s)]),
    [
      ['running', false, true, false],
      ['succeeded', true, false, false],
      ['failed', true, false, true],
      ['canceled', true, false, true],
    ],
  );
});

test('property: random event sequences keep every invariant and never lower progress', () => {
  let seed = 20300101;
  // mulberry32: a small seeded PRNG so a failure replays exactly.
  const rand = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
  const outcomes = { succeeded: 0, failed: 0, canceled: 0, rejected: 0, applied: 0 };
  for (let seq = 0; seq < 400; seq++) {
    let s = createOperation(at(0), { skipBuild: rand() < 0.3, reuse: rand() < 0.2 ? ['analyze', 'build'] : [] }).state;
    for (let i = 1; i <= 60; i++) {
      const roll = rand();
      const stage = rand() < 0.75 && s.current ? s.current : pick(STAGES);
      const attempt = rand() < 0.9 ? s.attempt : Math.max(1, s.attempt + pick([-1, 1]));
      const e: OperationEvent =
        roll < 0.04
          ? cancel
          : roll < 0.12
            ? retry
            : pick<OperationEvent>([
                { type: 'stage_started', stage, attempt },
                { type: 'stage_progress', stage, attempt, fraction: rand() },
                { type: 'heartbeat', stage, attempt },
                { type: 'stage_succeeded', stage, attempt },
                { type: 'stage_succeeded', stage, attempt },
                {
                  type: 'stage_failed',
                  stage,
                  attempt,
                  error: { code: pick(['archive_bad', 'build_failed', 'stage_gave_up']), message: 'x' },
                },
              ]);
      const where = `sequence ${seq}, event ${i} ${JSON.stringify(e)}`;
      try {
        const r = transition(s, e, at(i));
        assert.ok(r.state.progress >= s.progress, `${where}: progress went down`);
        checkInvariants(r.state, where);
        if (r.state.status !== s.status && isTerminal(r.state))
          outcomes[r.state.status as 'succeeded' | 'failed' | 'canceled']++;
        s = r.state;
        outcomes.applied++;
      } catch (err) {
        if (!(err instanceof HoistError) || !['conflict', 'not_cancelable', 'not_retryable'].includes(err.code))
          throw err;
        outcomes.rejected++;
      }
    }
  }
  // The generator must reach every ending, or the test proves little.
  for (const [k, n] of Object.entries(outcomes)) assert.ok(n > 50, `${k}: ${n}`);
});

test('describeTransitions prints every status, event and rejection as Markdown tables', () => {
  const md = describeTransitions();
  for (const word of [
    'running',
    'succeeded',
    'failed',
    'canceled',
    'queued',
    'skipped',
    'not_cancelable',
    'not_retryable',
    'invalid_transition',
    'deployment_in_progress',
    'maybe_stuck',
  ]) {
    assert.ok(md.includes(word), word);
  }
  for (const type of [
    'stage_started',
    'stage_progress',
    'heartbeat',
    'stage_released',
    'stage_succeeded',
    'stage_failed',
  ])
    assert.ok(md.includes(`| ${type}`) || md.includes(` ${type} |`), type);
  assert.match(md, /\| running \| → canceled[^|]*\| rejected: `not_retryable` \|/);
  assert.match(md, /\| failed \| rejected: `not_cancelable` \| → running, attempt \+ 1/);
  assert.match(md, /analyze 5–15, build 15–70, deploy 70–100/);
  const rows = md.split('\n').filter((l) => l.startsWith('|'));
  assert.is(rows.length, 2 + 4 + 2 + 4, 'two tables: 4 parent statuses and 4 stage positions');
  assert.equal(
    rows.map((r) => r.split('|').length - 2),
    [...Array(6).fill(3), ...Array(6).fill(7)],
    "every row has its table's column count",
  );
});

test.run();
