import type { Command } from 'commander';
import type { Role } from '../start.js';

/** Starts `roles`, prints where each listens, and stops them gracefully on SIGTERM or SIGINT. */
async function run(roles: Role[]): Promise<void> {
  const { closeOnSignals, startRoles } = await import('../start.js');
  const running = await startRoles(roles);
  for (const [role, url] of Object.entries(running.urls)) {
    const admin = role === 'edge' && running.edgeAdmin ? ` (health and metrics on ${running.edgeAdmin})` : '';
    console.log(role === 'worker' ? `hoist worker running (${url})` : `hoist ${role} listening on ${url}${admin}`);
  }
  closeOnSignals(running);
}

/**
 * `hoist start` runs the API, the worker and the edge in one process; `hoist api`, `hoist worker`
 * and `hoist edge` run one role each, any number of them, sharing the database, queue, storage and
 * deployer the configuration names.
 */
export default function start(program: Command): void {
  program
    .command('start')
    .description('run the API, the worker and the edge in one process on the configured plugins')
    .action(() => run(['api', 'worker', 'edge']));
  program
    .command('api')
    .description('run only the REST API (port), e.g. behind a load balancer with other API processes')
    .action(() => run(['api']));
  program
    .command('worker')
    .description(
      'run only a worker: takes deployment stages from the queue (queue=nats to share ' +
        'it between machines); health on workerPort',
    )
    .action(() => run(['worker']));
  program
    .command('edge')
    .description(
      'run only the edge (edgePort): serves live releases by Host header, from a routing ' +
        'table it loads from the database and keeps current; health and metrics on ' +
        'edgeAdminHost:edgeAdminPort',
    )
    .action(() => run(['edge']));
}
