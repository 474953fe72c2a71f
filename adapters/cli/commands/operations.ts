import type { Command } from 'commander';
import type { Operation } from '../../../client/hoist-client.js';
import { remoteAction, type RemoteOptions } from '../remote/remote-action.js';

/** `hoist operations show | cancel | retry`: read an operation, and cancel or retry it as its guidance allows. */
export default function operations(program: Command): void {
  const group = program.command('operations').description('show, cancel or retry a deployment operation');
  const common = (c: Command) =>
    c.argument('<id>', 'operation id').option('--api <url>', 'Hoist API URL (default: HOIST_API_URL, else the one you logged in to)').option('--json', 'print the operation as JSON');

  common(group.command('show').description('status, stages, build-log tail and the recommended next step')).action(
    remoteAction<RemoteOptions, [string]>(async ({ client }, o, id) => print(await client.operation(id), o.json)),
  );
  common(group.command('cancel').description('cancel queued or running work (refused, without asking the API, when it has ended)')).action(
    remoteAction<RemoteOptions, [string]>(async ({ client }, o, id) => print(await client.cancel(id), o.json)),
  );
  common(group.command('retry').description('retry a failed or canceled deployment when its guidance recommends it')).action(
    remoteAction<RemoteOptions, [string]>(async ({ client }, o, id) => print(await client.retry(id), o.json)),
  );
}

function print(op: Operation, json?: boolean): void {
  if (json) return console.log(JSON.stringify(op));
  const lines = [`operation ${op.id}: ${op.status}, ${op.progress}%${op.maybe_stuck ? ' (may be stuck)' : ''}`];
  for (const [name, s] of Object.entries(op.stages ?? {})) lines.push(`  ${name.padEnd(8)} ${s?.status}${s?.error ? ` (${s.error.code}: ${s.error.message})` : ''}`);
  for (const l of op.build_log?.last_lines ?? []) lines.push(`  │ ${l}`);
  if (op.result?.url) lines.push(`url: ${op.result.url}`);
  if (op.next_step?.message) lines.push(`next step (${op.next_step.action}): ${op.next_step.message}`);
  console.log(lines.join('\n'));
}
