import { Option, type Command } from 'commander';
import type { Operation, OperationQuery } from '../../../client/hoist-client.js';
import { usage } from '../remote/cli-error.js';
import { findProject } from '../remote/project-ref.js';
import { remoteAction, type RemoteOptions } from '../remote/remote-action.js';
import { printable, printableDeep } from '../remote/terminal.js';
import { printTable } from './print-table.js';

interface ListOptions extends RemoteOptions {
  project?: string;
  status?: OperationQuery['status'];
  kind?: OperationQuery['kind'];
  limit: string;
  cursor?: string;
}

/**
 * `hoist operations list | show | cancel | retry`: list the account's operations, read one, and cancel or
 * retry it as its guidance allows.
 */
export default function operations(program: Command): void {
  const group = program.command('operations').description('list, show, cancel or retry deployment operations');
  group
    .command('list')
    .description("the account's operations, newest first (one page: --cursor takes the next_cursor --json printed)")
    .option('--project <project>', 'only this project (id, name or slug)')
    .addOption(
      new Option('--status <status>', 'only operations with this status').choices([
        'queued',
        'running',
        'succeeded',
        'failed',
        'canceled',
      ]),
    )
    .addOption(new Option('--kind <kind>', 'only operations of this kind').choices(['deploy', 'delete_project']))
    .option('--limit <n>', 'at most this many, 1 to 100', '20')
    .option('--cursor <cursor>', 'the page after the one whose next_cursor this is')
    .option('--api <url>', 'Hoist API URL (default: HOIST_API_URL, else the one you logged in to)')
    .option('--json', 'print the page as JSON: {"operations": [...], "next_cursor"}')
    .action(
      remoteAction<ListOptions, []>(
        async ({ client }, o) => {
          const project = o.project ? await findProject(client, o.project) : null;
          const page = await client.operations({
            limit: Number(o.limit),
            ...(o.cursor ? { cursor: o.cursor } : {}),
            ...(project ? { project_id: project.id } : {}),
            ...(o.status ? { status: o.status } : {}),
            ...(o.kind ? { kind: o.kind } : {}),
          });
          if (o.json) return console.log(JSON.stringify(page));
          printTable(
            ['id', 'kind', 'status', 'progress', 'project', 'created'],
            page.operations.map((op) => [
              op.id ?? '',
              op.kind ?? '',
              op.status ?? '',
              `${op.progress ?? 0}%`,
              op.project_id ?? '-',
              op.created_at ?? '',
            ]),
            'No operations.',
          );
          if (page.next_cursor) console.log(`more: --cursor ${printable(page.next_cursor)}`);
        },
        {
          check: (o) => {
            if (!/^\d+$/.test(o.limit) || Number(o.limit) < 1 || Number(o.limit) > 100)
              throw usage('--limit takes a number from 1 to 100');
          },
        },
      ),
    );
  const common = (c: Command) =>
    c
      .argument('<id>', 'operation id')
      .option('--api <url>', 'Hoist API URL (default: HOIST_API_URL, else the one you logged in to)')
      .option('--json', 'print the operation as JSON');

  common(group.command('show').description('status, stages, build-log tail and the recommended next step')).action(
    remoteAction<RemoteOptions, [string]>(async ({ client }, o, id) => print(await client.operation(id), o.json)),
  );
  common(
    group
      .command('cancel')
      .description('cancel queued or running work (refused, without asking the API, when it has ended)'),
  ).action(remoteAction<RemoteOptions, [string]>(async ({ client }, o, id) => print(await client.cancel(id), o.json)));
  common(
    group.command('retry').description('retry a failed or canceled deployment when its guidance recommends it'),
  ).action(remoteAction<RemoteOptions, [string]>(async ({ client }, o, id) => print(await client.retry(id), o.json)));
}

function print(answer: Operation, json?: boolean): void {
  if (json) return console.log(JSON.stringify(answer));
  // Build-log lines and stage errors quote what a build or an app printed: they cannot drive the terminal.
  const op = printableDeep(answer);
  const lines = [`operation ${op.id}: ${op.status}, ${op.progress}%${op.maybe_stuck ? ' (may be stuck)' : ''}`];
  for (const [name, s] of Object.entries(op.stages ?? {}))
    lines.push(`  ${name.padEnd(8)} ${s?.status}${s?.error ? ` (${s.error.code}: ${s.error.message})` : ''}`);
  for (const l of op.build_log?.last_lines ?? []) lines.push(`  │ ${l}`);
  if (op.result?.url) lines.push(`url: ${op.result.url}`);
  if (op.next_step?.message) lines.push(`next step (${op.next_step.action}): ${op.next_step.message}`);
  console.log(lines.join('\n'));
}
