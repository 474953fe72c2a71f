import type { Command } from 'commander';
import { remoteAction, type RemoteOptions } from '../remote/remote-action.js';
import { printTable } from './print-table.js';

/** `hoist projects`: the account's projects, newest first, through the REST API. */
export default function projects(program: Command): void {
  program
    .command('projects')
    .description('list your projects (through the REST API)')
    .option('--api <url>', 'Hoist API URL (default: HOIST_API_URL, else the one you logged in to)')
    .option('--json', 'print the projects as JSON')
    .action(
      remoteAction<RemoteOptions, []>(async ({ client }, o) => {
        const list = await client.projects();
        if (o.json) console.log(JSON.stringify(list));
        else
          printTable(
            ['name', 'id', 'visibility', 'url'],
            list.map((p) => [p.name, p.id, p.visibility, p.url]),
            'no projects yet: `hoist deploy` creates one',
          );
      }),
    );
}
