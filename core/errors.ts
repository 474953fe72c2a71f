/** Stable, machine-readable error codes. The HTTP edge maps each to a status; core never does. */
export type ErrorCode =
  | 'invalid_request'
  | 'unauthorized'
  | 'forbidden'
  | 'registration_disabled'
  | 'plan_restricted'
  | 'not_found'
  | 'conflict'
  | 'rate_limited'
  | 'request_timeout'
  | 'payload_too_large'
  | 'gone'
  | 'precondition_failed'
  | 'unsupported_media_type'
  | 'idempotency_key_reused'
  | 'not_cancelable'
  | 'not_retryable'
  | 'not_promotable'
  | 'deployment_in_progress'
  | 'unavailable'
  | 'internal';

const HOIST_ERROR: unique symbol = Symbol.for('hoist.HoistError');
const STAGE_ERROR: unique symbol = Symbol.for('hoist.StageError');

/**
 * `value instanceof cls` across copies of this module: Hoist run from source and an external plugin
 * built against the compiled plugin API each have their own class, so instances carry a `Symbol.for`
 * brand, which the base class checks; a subclass keeps the ordinary prototype check.
 */
function isInstance(cls: unknown, base: unknown, brand: symbol, value: unknown): boolean {
  if (cls !== base) return Function.prototype[Symbol.hasInstance].call(cls, value);
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brand] === true;
}

/** The one error class core and plugins throw; `details` is safe to show to the caller. */
export class HoistError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isInstance(this, HoistError, HOIST_ERROR, value);
  }
  readonly [HOIST_ERROR] = true;
  override name = 'HoistError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export const invalid = (message: string, details: Record<string, unknown> = {}) =>
  new HoistError('invalid_request', message, details);
export const notFound = (what: string) => new HoistError('not_found', `${what} not found`);
export const unauthorized = (message = 'Missing, invalid or expired bearer token') =>
  new HoistError('unauthorized', message);
export const conflict = (message: string, details: Record<string, unknown> = {}) =>
  new HoistError('conflict', message, details);

/** Fields the spec names for a plan or entitlement restriction. */
export interface PlanRestriction {
  feature: string;
  plan: string;
  required_plan: string | null;
  limit: number | null;
  usage: number | null;
}

export const planRestricted = (message: string, r: PlanRestriction) =>
  new HoistError('plan_restricted', message, { ...r });

/**
 * Why a stage failed, shown in the operation's child state. `code` is stable (`archive_*`,
 * `analyze_*`, `build_*`, `deploy_*`); its prefix tells the client whether a retry may help
 * (core/operations/guidance.ts).
 */
export class StageError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isInstance(this, StageError, STAGE_ERROR, value);
  }
  readonly [STAGE_ERROR] = true;
  override name = 'StageError';
  constructor(
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
