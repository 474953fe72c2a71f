import type { OperationState } from './state-machine.js';

/** The guidance of the GET operation answer: what the client should do next, and why. */
export interface NextStep {
  action: 'poll' | 'retry' | 'cancel' | 'fix_input' | 'none';
  message: string;
}

/** Error-code prefixes that mean the upload itself is bad: retrying the same input fails the same way. */
export const INPUT_ERROR_PREFIXES = ['archive_', 'analyze_', 'deploy_redirects_', 'deploy_headers_'];

/** True when the operation's running stage has sent no sign of life for longer than `thresholdMs`. */
export function isMaybeStuck(state: OperationState, now: Date, thresholdMs: number): boolean {
  return silenceMs(state, now) > thresholdMs;
}

// Time since the running stage's last heartbeat; -1 when no stage is running.
function silenceMs(state: OperationState, now: Date): number {
  const stage = state.current && state.status === 'running' ? state.stages[state.current] : null;
  return stage?.status === 'running' ? now.getTime() - Date.parse(stage.heartbeatAt!) : -1;
}

/** The recommended next step for the client; `operationId` fills the paths in the message. */
export function recommendedNextStep(
  state: OperationState,
  now: Date,
  thresholdMs: number,
  operationId = '{operationID}',
): NextStep {
  const path = `/api/v1/operations/${operationId}`;
  const stage = state.current;
  if (state.status === 'succeeded')
    return { action: 'none', message: 'The deployment succeeded; nothing is left to do.' };
  if (state.status === 'canceled') {
    return {
      action: 'retry',
      message:
        `The deployment was canceled during the ${stage} stage; to resume it, retry with ` +
        `POST ${path}/retry (finished stages are reused).`,
    };
  }
  if (state.status === 'failed') {
    const error = state.error ?? { code: 'unknown', message: 'no reason was recorded' };
    const why = `The ${stage} stage failed (${error.code}: ${error.message})`;
    if (INPUT_ERROR_PREFIXES.some((p) => error.code.startsWith(p))) {
      return {
        action: 'fix_input',
        message:
          `${why}. Fix the archive or the project settings and upload it again; a retry ` + `would fail the same way.`,
      };
    }
    return {
      action: 'retry',
      message:
        `${why}. Fix the cause if it is in your code or settings, then retry with POST ` +
        `${path}/retry (finished stages are reused).`,
    };
  }
  const silence = silenceMs(state, now);
  if (silence > thresholdMs) {
    return {
      action: 'cancel',
      message:
        `The ${stage} stage has sent no heartbeat for ${Math.round(silence / 1000)} s and ` +
        `may be stuck. Keep polling GET ${path} (a stalled job is redelivered to another ` +
        `worker), or cancel with POST ${path}/cancel and then retry.`,
    };
  }
  return { action: 'poll', message: `Poll GET ${path} every 2–10 s until status is succeeded, failed or canceled.` };
}
