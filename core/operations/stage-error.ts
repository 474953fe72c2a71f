/**
 * Why a stage failed, shown in the operation's child state. `code` is stable (`archive_*`,
 * `analyze_*`, `build_*`, `deploy_*`); `retryable` is false when only a change of the input helps.
 */
export class StageError extends Error {
  override name = 'StageError';
  constructor(
    readonly code: string,
    message: string,
    readonly retryable: boolean,
    readonly details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
