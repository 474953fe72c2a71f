/** Shared JSON schemas for routes; `errorResponses` documents the error body per status. */
export const ErrorBody = {
  $id: 'ErrorBody',
  type: 'object',
  description: 'The stable error body. Plan restrictions also carry feature, plan, required_plan, limit and usage.',
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'request_id', 'details'],
      properties: {
        code: {
          type: 'string',
          description: 'Machine-readable code, e.g. invalid_request, unauthorized, not_found, plan_restricted.',
        },
        message: { type: 'string' },
        request_id: { type: 'string' },
        details: { type: 'object', additionalProperties: true },
        feature: { type: 'string' },
        plan: { type: 'string' },
        required_plan: { type: ['string', 'null'] },
        limit: { type: ['integer', 'null'] },
        usage: { type: ['integer', 'null'] },
      },
    },
  },
} as const;

const meanings: Record<number, string> = {
  400: 'Invalid input (invalid_request); details.field names the field.',
  401: 'Missing, invalid or expired bearer token (unauthorized).',
  403: 'Registration, plan or entitlement restriction.',
  404: 'Missing, or belongs to another account (not_found).',
  408: 'The body came slower than the minimum rate (request_timeout); the connection closes.',
  409: 'Conflicts with the current state.',
  410: 'Used or expired.',
  412: 'A precondition header does not match (precondition_failed).',
  413: 'Payload too large.',
  415: 'Unsupported Content-Type (unsupported_media_type).',
  422: 'Idempotency-Key reused with a different request.',
  429: 'Too many requests; see Retry-After.',
  503: 'A backend is unavailable.',
};

/** Response schema entries for the given error statuses. */
export function errorResponses(...statuses: number[]) {
  return Object.fromEntries(statuses.map((s) => [s, { description: meanings[s] ?? 'Error', $ref: 'ErrorBody#' }]));
}

export const Timestamp = { type: 'string', format: 'date-time' } as const;
export const Uuid = { type: 'string', format: 'uuid' } as const;

/** A member as a record names them (`{user_id, email}`, the e-mail it had then) or null, with `description`. */
export const memberOrNull = (description: string) =>
  ({
    anyOf: [
      {
        type: 'object',
        required: ['user_id', 'email'],
        properties: { user_id: { type: 'string' }, email: { type: 'string' } },
      },
      { type: 'null' },
    ],
    description,
  }) as const;
