import type { Command } from 'commander';
import { closeOnSignals, startRoles } from '../start.js';

/** `hoist start`: all three roles in one process. */
export default function start(program: Command): void {
  program
    .command('start')
    .description('run the API, the worker and the edge in one process on the configured plugins')
    .action(async () => {
      const running = await startRoles(['api', 'worker', 'edge']);
      for (const [role, url] of Object.entries(running.urls)) console.log(role === 'worker' ? `hoist worker running (${url})` : `hoist ${role} listening on ${url}`);
      closeOnSignals(running);
    });
}
