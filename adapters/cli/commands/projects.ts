import type { Command } from 'commander';
import type { HoistClient, Operation, Project } from '../../../client/hoist-client.js';
import { confirm, needConfirmation } from '../remote/confirm.js';
import { findProject } from '../remote/project-ref.js';
import { remoteAction, remoteOptions, type RemoteOptions } from '../remote/remote-action.js';
import { bar, interactive, printableDeep } from '../remote/terminal.js';
import { printTable } from './print-table.js';

type RmOptions = RemoteOptions & { yes?: boolean };

/**
 * `hoist projects` (or `hoist projects ls`): the account's projects, newest first; `hoist projects rm <project>`:
 * delete one, waiting for its teardown. Through the REST API.
 */
export default function projects(program: Command): void {
  const group = remoteOptions(
    program
      .command('projects')
      .description('list your projects (through the REST API); `hoist projects rm <project>` deletes one'),
  ).action(remoteAction<RemoteOptions, []>(async ({ client }, o) => list(client, o)));

  remoteOptions(group.command('ls').description('list your projects, newest first')).action(
    withGlobals(remoteAction<RemoteOptions, []>(async ({ client }, o) => list(client, o))),
  );

  remoteOptions(
    group
      .command('rm')
      .description(
        'delete a project: its URL stops serving at once, then its releases, uploads, custom domains, environment, ' +
          'webhooks and deploy hooks go (asks first on a terminal)',
      )
      .argument('<project>', 'project id, name or slug (see hoist projects)')
      .option('-y, --yes', 'delete without asking (needed when not on a terminal)'),
  ).action(
    withGlobals(
      remoteAction<RmOptions, [string]>(
        async ({ client }, o, ref) => remove(client, o, await findProject(client, ref)),
        {
          check: (o, ref) => needConfirmation(o.yes, `project ${JSON.stringify(ref)}`, `hoist projects rm ${ref}`),
        },
      ),
    ),
  );
}

/**
 * Gives a subcommand's action the options of `hoist projects` too: commander hands the group the --json and --api that
 * follow `rm` or `ls`, as the bare `hoist projects` takes them as well.
 */
function withGlobals(action: (...all: unknown[]) => Promise<void>) {
  return (...all: unknown[]) => {
    const command = all[all.length - 1] as Command;
    return action(...all.slice(0, -2), command.optsWithGlobals(), command);
  };
}

async function list(client: HoistClient, o: RemoteOptions): Promise<void> {
  const all = await client.projects();
  if (o.json) console.log(JSON.stringify(all));
  else
    printTable(
      ['name', 'id', 'visibility', 'url'],
      all.map((p) => [p.name, p.id, p.visibility, p.url]),
      'no projects yet: `hoist deploy` creates one',
    );
}

/** What deleting the project takes with it, counted before it goes. */
async function contentsOf(client: HoistClient, project: Project) {
  const [releases, domains, environment, webhooks, deployHooks] = await Promise.all([
    client.releases(project.id),
    client.domains(project.id),
    client.environment(project.id),
    client.webhooks(project.id),
    client.deployHooks(project.id),
  ]);
  return {
    releases: releases.length,
    domains: domains.map((d) => d.hostname),
    environment_variables: new Set(environment.map((v) => v.name)).size,
    webhooks: webhooks.length,
    deploy_hooks: deployHooks.length,
  };
}

const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

/** Asks (unless --yes), deletes the project, follows its delete_project operation and prints what went. */
async function remove(client: HoistClient, o: RmOptions, project: Project): Promise<void> {
  const contents = await contentsOf(client, project);
  // As shown to a person (the question above all): a name or a hostname cannot drive the terminal to hide another.
  const p = printableDeep(project);
  const shown = printableDeep(contents);
  const hostnames = shown.domains.length ? ` (${shown.domains.join(', ')})` : '';
  const what =
    `${count(contents.releases, 'release')}, ${count(contents.domains.length, 'custom domain')}${hostnames}, ` +
    `${count(contents.environment_variables, 'environment variable')}, ${count(contents.webhooks, 'webhook')} and ` +
    `${count(contents.deploy_hooks, 'deploy hook')}`;
  await confirm(o.yes, `Delete project ${p.name} (${p.id}, ${p.url}) with ${what}? This cannot be undone. [y/N]`);
  const answer = await client.deleteProject(project.id);
  const op = await client.waitForOperation(answer.operation.id, {
    minMs: 250,
    maxMs: 2000,
    onUpdate: progress(o.json ? 'quiet' : interactive() ? 'tty' : 'plain', p, answer.operation.id),
  });
  const removed = { id: project.id, name: project.name, slug: project.slug, url: project.url };
  const end = printableDeep(op);
  if (o.json) console.log(JSON.stringify({ removed, ...contents, operation: op }));
  else if (op.status === 'succeeded')
    console.log(
      `Deleted project ${p.name} (${p.id}): ${p.url} no longer serves, ` +
        `and the slug ${p.slug} is free again.\n` +
        `Removed with it: ${what}.`,
    );
  else console.log(`The deletion ${end.status}: ${end.error?.message ?? ''} (operation ${end.id})`);
  if (op.status !== 'succeeded') process.exitCode = 1;
}

/**
 * Shows the deletion's progress: on a terminal a bar redrawn in place; otherwise a line on stderr each time its status
 * or progress changes; with --json nothing.
 */
function progress(mode: 'tty' | 'plain' | 'quiet', project: Project, id: string) {
  let last = '';
  return (answer: Operation) => {
    const op = printableDeep(answer);
    const seen = `${op.status} ${op.progress ?? 0}%`;
    if (mode === 'quiet' || seen === last) return;
    last = seen;
    if (mode === 'plain') process.stderr.write(`Deleting ${project.name} (operation ${id}): ${seen}\n`);
    else
      process.stdout.write(
        `\r\x1b[2KDeleting ${project.name}  ${bar((op.progress ?? 0) / 100)}  ${seen}` +
          `${op.status === 'running' || op.status === 'queued' ? '' : '\n'}`,
      );
  };
}
