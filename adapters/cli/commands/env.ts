import { Option, type Command } from 'commander';
import { usage } from '../remote/cli-error.js';
import { findProject } from '../remote/project-ref.js';
import { projectOptions, remoteAction, type RemoteOptions } from '../remote/remote-action.js';
import type { EnvironmentTarget } from '../../../client/hoist-client.js';
import { printable, printableDeep } from '../remote/terminal.js';
import { printTable } from './print-table.js';

type EnvOptions = RemoteOptions & { project?: string };
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `hoist env ls | set | rm`: a project's environment variables (values are write-only). */
export default function env(program: Command): void {
  const group = program
    .command('env')
    .description("manage a project's environment variables (they apply to the next deployment)");

  projectOptions(
    group.command('ls').description('list names, scopes, targets and digests (values are never shown)'),
  ).action(
    remoteAction<EnvOptions, []>(async ({ client }, o) => {
      const project = await findProject(client, o.project);
      const vars = await client.environment(project.id);
      if (o.json) console.log(JSON.stringify(vars));
      else
        printTable(
          ['name', 'scope', 'target', 'digest', 'updated'],
          vars.map((v) => [v.name, v.scope, v.target, v.digest, v.updated_at]),
          `no environment variables on ${project.name}`,
        );
    }),
  );

  projectOptions(
    group
      .command('set')
      .description('set a variable; the value is read from stdin when not given (keeps secrets out of shell history)')
      .argument('<name>', 'variable name')
      .argument('[value]', 'the value (omit to read it from stdin)')
      .addOption(
        new Option('--scope <scope>', 'build, runtime or both').choices(['build', 'runtime', 'both']).default('both'),
      )
      .addOption(targetOption('the deployments that get this value').default('all')),
  ).action(
    remoteAction<
      EnvOptions & { scope: 'build' | 'runtime' | 'both'; target: EnvironmentTarget },
      [string, string | undefined]
    >(
      async ({ client }, o, name, value) => {
        const project = await findProject(client, o.project);
        if (value === undefined) {
          value = '';
          for await (const chunk of process.stdin) value += chunk;
          value = value.replace(/\r?\n$/, '');
        }
        const v = await client.setEnvironment(project.id, name, value, o.scope, o.target);
        if (o.json) console.log(JSON.stringify(v));
        else {
          const { name: set, scope, target } = printableDeep(v);
          console.log(
            `Set ${set} (${scope}, ${target}) on ${printable(project.name)}; it applies to the next deployment.`,
          );
        }
      },
      { check: (_o, name) => validName(name) },
    ),
  );

  projectOptions(
    group
      .command('rm')
      .description('remove a variable (every value of it, or one target)')
      .argument('<name>', 'variable name')
      .addOption(targetOption('remove only the value for this target')),
  ).action(
    remoteAction<EnvOptions & { target?: EnvironmentTarget }, [string]>(
      async ({ client }, o, name) => {
        const project = await findProject(client, o.project);
        await client.removeEnvironment(project.id, name, o.target);
        const what = o.target ? `${name} (${o.target})` : name;
        if (o.json)
          console.log(JSON.stringify({ removed: name, ...(o.target && { target: o.target }), project: project.id }));
        else console.log(`Removed ${what} from ${printable(project.name)}; it applies to the next deployment.`);
      },
      { check: (_o, name) => validName(name) },
    ),
  );
}

/** `--target`: which deployments a value is for. */
const targetOption = (what: string) =>
  new Option('--target <target>', `${what}: all, production or preview`).choices(['all', 'production', 'preview']);

function validName(name: string): void {
  if (!NAME.test(name))
    throw usage(`${JSON.stringify(name)} is not a variable name (letters, digits and _, not starting with a digit)`);
}
