/** A failure the CLI explains itself: `message` is for a person, `exitCode` 1 (failed) or 2 (bad usage). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
    readonly code = exitCode === 2 ? 'bad_usage' : 'failed',
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** Bad usage (exit 2). */
export const usage = (message: string) => new CliError(message, 2);
