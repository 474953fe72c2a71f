import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { INPUT_ERROR_PREFIXES, isMaybeStuck, recommendedNextStep } from '../../../core/operations/guidance.js';
import {
  createOperation,
  transition,
  type OperationEvent,
  type OperationState,
  type Stage,
} from '../../../core/operations/state-machine.js';

const t0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (seconds: number) => new Date(t0 + seconds * 1000);
const THRESHOLD = 60_000;
const ID = '0b9a3c1e-7f1d-4c55-9a59-7d0e8b1f2a30';

/** Applies events at the given seconds to a fresh operation created at 0. */
function state(...steps: [number, OperationEvent][]): OperationState {
  let s = createOperation(at(0)).state;
  for (const [sec, e] of steps) s = transition(s, e, at(sec)).state;
  return s;
}
const started = (stage: Stage, attempt = 1): OperationEvent => ({ type: 'stage_started', stage, attempt });
const succeeded = (stage: Stage): OperationEvent => ({ type: 'stage_succeeded', stage, attempt: 1 });
const failed = (stage: Stage, code: string): OperationEvent => ({
  type: 'stage_failed',
  stage,
  attempt: 1,
  error: { code, message: 'it broke' },
});

test('a running stage is maybe_stuck only once its last heartbeat is older than the threshold', () => {
  const s = state([10, started('analyze')]);
  assert.not.ok(isMaybeStuck(s, at(10 + 59), THRESHOLD));
  assert.not.ok(isMaybeStuck(s, at(10 + 60), THRESHOLD), 'exactly the threshold is not older than it');
  assert.ok(isMaybeStuck(s, at(10 + 61), THRESHOLD));
  for (const e of [
    { type: 'heartbeat', stage: 'analyze', attempt: 1 },
    { type: 'stage_progress', stage: 'analyze', attempt: 1, fraction: 0.5 },
  ] as OperationEvent[]) {
    const alive = transition(s, e, at(50)).state;
    assert.not.ok(isMaybeStuck(alive, at(100), THRESHOLD), `${e.type} is a sign of life`);
    assert.ok(isMaybeStuck(alive, at(111), THRESHOLD));
  }
});

test('queued and terminal operations are never maybe_stuck', () => {
  const later = at(86_400);
  const all = {
    fresh: state(),
    'next stage queued': state([1, started('analyze')], [2, succeeded('analyze')]),
    succeeded: state(
      [1, started('analyze')],
      [2, succeeded('analyze')],
      [3, started('build')],
      [4, succeeded('build')],
      [5, started('deploy')],
      [6, succeeded('deploy')],
    ),
    failed: state([1, started('analyze')], [2, failed('analyze', 'analyze_no_runtime')]),
    canceled: state([1, started('analyze')], [2, { type: 'cancel_requested' }]),
  };
  for (const [name, s] of Object.entries(all)) assert.not.ok(isMaybeStuck(s, later, THRESHOLD), name);
});

test('running and healthy: poll with bounded backoff', () => {
  for (const s of [state(), state([1, started('analyze')])]) {
    assert.equal(recommendedNextStep(s, at(30), THRESHOLD, ID), {
      action: 'poll',
      message: `Poll GET /api/v1/operations/${ID} every 2–10 s until status is succeeded, failed or canceled.`,
    });
  }
  assert.match(
    recommendedNextStep(state(), at(1), THRESHOLD).message,
    '/api/v1/operations/{operationID} ',
    'a placeholder without an id',
  );
});

test('running but maybe stuck: cancel, then retry', () => {
  const s = state([1, started('analyze')], [2, succeeded('analyze')], [3, started('build')]);
  const step = recommendedNextStep(s, at(3 + 90), THRESHOLD, ID);
  assert.is(step.action, 'cancel');
  assert.match(step.message, 'The build stage has sent no heartbeat for 90 s');
  assert.match(step.message, `POST /api/v1/operations/${ID}/cancel`);
});

test('succeeded: nothing to do', () => {
  const s = state(
    [1, started('analyze')],
    [2, succeeded('analyze')],
    [3, started('build')],
    [4, succeeded('build')],
    [5, started('deploy')],
    [6, succeeded('deploy')],
  );
  assert.equal(recommendedNextStep(s, at(7), THRESHOLD, ID), {
    action: 'none',
    message: 'The deployment succeeded; nothing is left to do.',
  });
});

test('failed on bad input: fix the input rather than retry', () => {
  assert.equal(INPUT_ERROR_PREFIXES, ['archive_', 'analyze_', 'deploy_redirects_', 'deploy_headers_']);
  for (const code of ['archive_not_zip', 'analyze_no_runtime']) {
    const step = recommendedNextStep(
      state([1, started('analyze')], [2, failed('analyze', code)]),
      at(3),
      THRESHOLD,
      ID,
    );
    assert.is(step.action, 'fix_input', code);
    assert.is(
      step.message,
      `The analyze stage failed (${code}: it broke). Fix the archive or the project ` +
        `settings and upload it again; a retry would fail the same way.`,
    );
  }
});

test('failed otherwise: retry, reusing finished stages', () => {
  const build = state(
    [1, started('analyze')],
    [2, succeeded('analyze')],
    [3, started('build')],
    [4, failed('build', 'build_command_failed')],
  );
  assert.equal(recommendedNextStep(build, at(5), THRESHOLD, ID), {
    action: 'retry',
    message:
      `The build stage failed (build_command_failed: it broke). Fix the cause if it is ` +
      `in your code or settings, then retry with POST /api/v1/operations/${ID}/retry ` +
      `(finished stages are reused).`,
  });
  const gaveUp = state([1, failed('analyze', 'stage_gave_up')]);
  assert.is(
    recommendedNextStep(gaveUp, at(2), THRESHOLD, ID).action,
    'retry',
    "a worker giving up is not the input's fault",
  );
});

test('canceled: retry resumes it', () => {
  const s = state([1, started('analyze')], [2, succeeded('analyze')], [3, { type: 'cancel_requested' }]);
  assert.equal(recommendedNextStep(s, at(4), THRESHOLD, ID), {
    action: 'retry',
    message:
      `The deployment was canceled during the build stage; to resume it, retry with ` +
      `POST /api/v1/operations/${ID}/retry (finished stages are reused).`,
  });
});

test.run();
