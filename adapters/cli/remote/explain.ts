import { HoistApiError, HoistGuidanceError, HoistNetworkError } from '../../../client/errors.js';
import { HoistError } from '../../../core/errors.js';
import { CliError } from './cli-error.js';
import { formatBytes } from './terminal.js';

/** An error as the CLI reports it: a message for a person, a body for --json, and the exit code. */
export interface Explained {
  message: string;
  json: { error: Record<string, unknown> };
  exitCode: number;
}

const sized = (feature: string | null, n: number | null) =>
  n === null ? 'unlimited' : feature?.endsWith('bytes') ? formatBytes(n) : String(n);

/**
 * Turns any error into something a person can act on (what happened, and what to do). `tokenFrom`: where the token
 * the failed call sent came from ('none': it sent none, so a 401 is the API's own answer, a wrong password say).
 */
export function explain(err: unknown, tokenFrom: 'env' | 'file' | 'none' = 'file'): Explained {
  if (err instanceof CliError)
    return {
      message: err.message,
      json: { error: { code: err.code, message: err.message, details: err.details } },
      exitCode: err.exitCode,
    };
  if (err instanceof HoistError) {
    return {
      message: err.message,
      json: { error: { code: err.code, message: err.message, details: err.details } },
      exitCode: err.code === 'invalid_request' ? 2 : 1,
    };
  }
  if (err instanceof HoistNetworkError) {
    const message =
      `${err.message}. Is Hoist running there? Point the CLI elsewhere with --api <url> ` + `or HOIST_API_URL.`;
    return {
      message,
      json: { error: { code: 'network_unreachable', message, details: { url: err.url } } },
      exitCode: 1,
    };
  }
  if (err instanceof HoistGuidanceError)
    return {
      message: err.message,
      json: { error: { code: err.code, message: err.message, details: {} } },
      exitCode: 1,
    };
  if (err instanceof HoistApiError) {
    const json = {
      error: {
        code: err.code,
        message: err.message,
        request_id: err.requestId,
        details: err.details,
        ...planFields(err),
      },
    };
    let message = `${err.message} (${err.code}${err.requestId ? `, request ${err.requestId}` : ''})`;
    if (err.status === 401 && tokenFrom !== 'none') {
      message =
        tokenFrom === 'env'
          ? 'The API refused HOIST_TOKEN (expired, revoked or invalid): set a fresh token, or ' +
            'unset it and run `hoist login`.'
          : 'Your login has expired or was revoked: run `hoist login` again.';
      json.error.code = 'unauthorized';
    } else if (err.code === 'plan_restricted') {
      const limit =
        err.limit !== null || err.usage !== null
          ? ` Limit ${sized(err.feature, err.limit)}, usage ${sized(err.feature, err.usage)}.`
          : '';
      const upgrade = err.requiredPlan ? ` The ${err.requiredPlan} plan allows it.` : ' No plan allows it.';
      message = `Your plan (${err.plan ?? 'unknown'}) does not allow this: ${err.message}.${limit}${upgrade}`;
    } else if (err.code === 'payload_too_large' && typeof err.details.limit === 'number') {
      message = `${err.message} (the limit is ${formatBytes(err.details.limit)})`;
    }
    return { message, json, exitCode: 1 };
  }
  const message = (err as Error)?.message ?? String(err);
  return { message, json: { error: { code: 'internal', message, details: {} } }, exitCode: 1 };
}

function planFields(err: HoistApiError): Record<string, unknown> {
  return err.code === 'plan_restricted'
    ? { feature: err.feature, plan: err.plan, required_plan: err.requiredPlan, limit: err.limit, usage: err.usage }
    : {};
}
