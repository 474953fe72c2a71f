import type { Command } from 'commander';
import { findProject } from '../remote/project-ref.js';
import { remoteAction, type RemoteOptions } from '../remote/remote-action.js';
import { printableDeep } from '../remote/terminal.js';
import { printTable } from './print-table.js';

/**
 * `hoist releases`: the release history of a project, newest first; `hoist rollback <releaseID>`: make an
 * earlier release live again (a promote: no build), waiting for the switch.
 */
export default function releases(program: Command): void {
  program
    .command('releases')
    .description('list the releases of a project, newest first (the live one is marked)')
    .option('--project <project>', 'project id, name or slug (default: the project of this folder)')
    .option('--api <url>', 'Hoist API URL (default: HOIST_API_URL, else the one you logged in to)')
    .option('--json', 'print the releases as JSON')
    .action(
      remoteAction<RemoteOptions & { project?: string }, []>(async ({ client }, o) => {
        const project = await findProject(client, o.project);
        const list = await client.releases(project.id);
        if (o.json) console.log(JSON.stringify({ project: { id: project.id, name: project.name }, releases: list }));
        else
          printTable(
            ['', 'id', 'target', 'status', 'live since', 'promotable', 'source', 'started by'],
            list.map((r) => [
              r.live ? '*' : '',
              r.id,
              r.target,
              r.status,
              r.live_at ?? '-',
              r.promotable ? 'yes' : 'no',
              r.source ?? '-',
              r.started_by?.email ?? '-',
            ]),
            `no releases of ${project.name} yet`,
          );
      }),
    );

  program
    .command('rollback')
    .alias('promote')
    .argument('<releaseID>', 'the release to make live (see hoist releases: promotable yes)')
    .description(
      'make an earlier release live again without a build (instant rollback; plans with instant_rollback), ' +
        'or a preview live as it runs (every plan), and wait until it serves',
    )
    .option('--project <project>', 'project id, name or slug (default: the project of this folder)')
    .option('--api <url>', 'Hoist API URL (default: HOIST_API_URL, else the one you logged in to)')
    .option('--json', 'print the operation as JSON')
    .action(
      remoteAction<RemoteOptions & { project?: string }, [string]>(async ({ client }, o, releaseId) => {
        const project = await findProject(client, o.project);
        const answer = await client.promote(project.id, releaseId);
        const op = await client.waitForOperation(answer.operation.id);
        if (o.json) console.log(JSON.stringify({ project: { id: project.id, name: project.name }, operation: op }));
        else if (op.status === 'succeeded')
          console.log(`Release ${releaseId} is live: ${printableDeep(answer.project.url)}`);
        else {
          const end = printableDeep(op);
          console.log(`The promote ${end.status}: ${end.error?.message ?? ''} (operation ${end.id})`);
        }
        if (op.status !== 'succeeded') process.exitCode = 1;
      }),
    );
}
