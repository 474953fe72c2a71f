import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { HoistError, type ErrorCode } from '../../core/errors.js';

/** The only place error codes become HTTP statuses. */
export const statusOf: Record<ErrorCode, number> = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  registration_disabled: 403,
  plan_restricted: 403,
  not_found: 404,
  request_timeout: 408,
  conflict: 409,
  not_cancelable: 409,
  not_retryable: 409,
  not_promotable: 409,
  deployment_in_progress: 409,
  gone: 410,
  precondition_failed: 412,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  rate_limited: 429,
  unavailable: 503,
  internal: 500,
};

const codeOfStatus = (status: number): ErrorCode =>
  status === 401
    ? 'unauthorized'
    : status === 404
      ? 'not_found'
      : status === 408
        ? 'request_timeout'
        : status === 413
          ? 'payload_too_large'
          : status === 429
            ? 'rate_limited'
            : 'invalid_request';

/** The spec's error body. */
export function errorBody(
  req: FastifyRequest,
  code: ErrorCode,
  message: string,
  details: Record<string, unknown> = {},
) {
  const error: Record<string, unknown> = { code, message, request_id: req.id, details };
  // Plan restrictions also carry their machine-readable fields beside `code`, as the spec allows.
  if (code === 'plan_restricted') Object.assign(error, details);
  return { error };
}

/** Maps HoistError, schema-validation and fastify errors to the error body; never leaks internals. */
export function errorHandler(err: FastifyError | HoistError | Error, req: FastifyRequest, reply: FastifyReply) {
  if (err instanceof HoistError) {
    const status = statusOf[err.code];
    if (status >= 500) req.log.error({ err }, err.message);
    if (err.code === 'rate_limited' && typeof err.details.retry_after === 'number')
      reply.header('retry-after', String(err.details.retry_after));
    // The rest of a body that came too slowly is not read: the connection ends with the answer.
    if (err.code === 'request_timeout') reply.header('connection', 'close');
    return reply.status(status).send(errorBody(req, err.code, err.message, err.details));
  }
  const fe = err as FastifyError;
  if (fe.validation) {
    const errors = fe.validation.map((v) => {
      const missing = (v.params as { missingProperty?: string }).missingProperty;
      const extra = (v.params as { additionalProperty?: string }).additionalProperty;
      const path = `${v.instancePath}${missing ? `/${missing}` : ''}${extra ? `/${extra}` : ''}`
        .replace(/^\//, '')
        .replace(/\//g, '.');
      const message = extra ? 'is not a known field' : (v.message ?? 'is invalid');
      return { field: path || fe.validationContext || 'body', message };
    });
    const first = errors[0];
    return reply.status(400).send(
      errorBody(req, 'invalid_request', `${fe.validationContext ?? 'request'} ${first.field} ${first.message}`, {
        field: first.field,
        errors,
      }),
    );
  }
  const status = typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500 ? fe.statusCode : 500;
  if (status === 500) {
    req.log.error({ err }, 'unhandled error');
    return reply.status(500).send(errorBody(req, 'internal', 'Internal error; quote the request id when reporting it'));
  }
  return reply.status(status).send(errorBody(req, codeOfStatus(status), fe.message));
}
