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
  | 'deployment_in_progress'
  | 'unavailable'
  | 'internal';

/** The one error class core and plugins throw; `details` is safe to show to the caller. */
export class HoistError extends Error {
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

export const invalid = (message: string, details: Record<string, unknown> = {}) => new HoistError('invalid_request', message, details);
export const notFound = (what: string) => new HoistError('not_found', `${what} not found`);
export const unauthorized = (message = 'Missing, invalid or expired bearer token') => new HoistError('unauthorized', message);
export const conflict = (message: string, details: Record<string, unknown> = {}) => new HoistError('conflict', message, details);

/** Fields the spec names for a plan or entitlement restriction. */
export interface PlanRestriction {
  feature: string;
  plan: string;
  required_plan: string | null;
  limit: number | null;
  usage: number | null;
}

export const planRestricted = (message: string, r: PlanRestriction) => new HoistError('plan_restricted', message, { ...r });
