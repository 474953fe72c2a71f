import { ask } from './ask.js';
import { CliError } from './cli-error.js';

/** Whether a person can be asked: stdin and stdout are both a terminal. */
export const canAsk = () => Boolean(process.stdin.isTTY && process.stdout.isTTY);

/**
 * For a command that removes something: throws bad usage (exit 2, `confirmation_required`) when `yes` is not given and
 * nobody can be asked, so a script never removes anything by accident. Run it before any request.
 */
export function needConfirmation(yes: boolean | undefined, what: string, retry: string): void {
  if (yes || canAsk()) return;
  throw new CliError(
    `Refusing to remove ${what} without --yes when not on a terminal (nothing was removed): run \`${retry} --yes\`.`,
    2,
    'confirmation_required',
  );
}

/**
 * Unless `yes`, asks `question` (which ends with "[y/N]") on the terminal; throws a CliError `canceled` (exit 1)
 * unless the answer is y or yes.
 */
export async function confirm(yes: boolean | undefined, question: string): Promise<void> {
  if (yes) return;
  const answer = await ask(`${question} `).answer;
  if (answer !== 'y' && answer !== 'yes') throw new CliError('Canceled: nothing was removed.', 1, 'canceled');
}
