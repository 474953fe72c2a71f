import type { Command } from 'commander';
import { findProject } from '../remote/project-ref.js';
import { remoteAction, type RemoteOptions } from '../remote/remote-action.js';
import { printTable } from './print-table.js';

/** `hoist releases`: the release history of a project, newest first. */
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
            ['', 'id', 'status', 'live since', 'operation'],
            list.map((r) => [r.live ? '*' : '', r.id, r.status, r.live_at ?? '-', r.operation_id]),
            `no releases of ${project.name} yet`,
          );
      }),
    );
}
