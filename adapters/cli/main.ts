import { Command, CommanderError } from 'commander';
import { HoistError } from '../../core/errors.js';
import { commands } from './commands/index.js';

const program = new Command('hoist')
  .description('Hoist: upload a ZIP, get a live URL.')
  .showHelpAfterError()
  .exitOverride();
for (const add of commands) add(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  // Commander has already printed its usage message; bad usage exits 2, help exits 0.
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2);
  const e = err as Error;
  console.error(`hoist: ${e instanceof HoistError ? `${e.message} (${e.code})` : e.message}`);
  process.exit(e instanceof HoistError && e.code === 'invalid_request' ? 2 : 1);
}
