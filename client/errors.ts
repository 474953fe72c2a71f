/** An error answer of the API, with the spec's error body and, for plan restrictions, its plan fields. */
export class HoistApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly requestId: string | null;
  readonly details: Record<string, unknown>;
  /** Plan restriction fields (403 plan_restricted); null when absent. */
  readonly feature: string | null;
  readonly plan: string | null;
  readonly requiredPlan: string | null;
  readonly limit: number | null;
  readonly usage: number | null;

  constructor(status: number, body: unknown) {
    const e = errorObject(body);
    super(typeof e.message === 'string' ? e.message : `HTTP ${status}`);
    this.name = 'HoistApiError';
    this.status = status;
    this.code = typeof e.code === 'string' ? e.code : `http_${status}`;
    this.requestId = typeof e.request_id === 'string' ? e.request_id : null;
    this.details = e.details && typeof e.details === 'object' ? (e.details as Record<string, unknown>) : {};
    const field = (k: string) => e[k] ?? this.details[k];
    const text = (k: string) => (typeof field(k) === 'string' ? (field(k) as string) : null);
    const num = (k: string) => (typeof field(k) === 'number' ? (field(k) as number) : null);
    this.feature = text('feature');
    this.plan = text('plan');
    this.requiredPlan = text('required_plan');
    this.limit = num('limit');
    this.usage = num('usage');
  }
}

/** A request that got no answer at all (refused, reset, DNS, timeout) after its retries; names the URL. */
export class HoistNetworkError extends Error {
  constructor(
    readonly url: string,
    cause: unknown,
  ) {
    super(`Cannot reach ${url}: ${reasonOf(cause)}`, { cause });
    this.name = 'HoistNetworkError';
  }
}

/** A call the client refused without sending, because the operation's guidance says it cannot work. */
export class HoistGuidanceError extends Error {
  constructor(
    readonly code: 'not_cancelable' | 'not_retryable',
    message: string,
    readonly operation: unknown,
  ) {
    super(message);
    this.name = 'HoistGuidanceError';
  }
}

// The spec's body is {error: {...}}; some answers carry a simpler form with error as a plain string.
function errorObject(body: unknown): Record<string, unknown> {
  const error = (body as { error?: unknown } | null)?.error;
  if (typeof error === 'string') return { message: error };
  if (error && typeof error === 'object') return error as Record<string, unknown>;
  return typeof body === 'string' && body ? { message: body.slice(0, 500) } : {};
}

function reasonOf(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (err as Error)?.message ?? String(err);
}

/** The HoistApiError of a non-2xx answer (reads its body). */
export async function apiErrorOf(res: Response): Promise<HoistApiError> {
  const text = await res.text().catch(() => '');
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON (a proxy's page): the error keeps the text.
  }
  return new HoistApiError(res.status, body);
}
