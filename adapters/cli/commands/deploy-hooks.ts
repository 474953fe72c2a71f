import type { Command } from 'commander';
import { usage } from '../remote/cli-error.js';
import { printable } from '../remote/terminal.js';
import { checkId, projectAction, type ProjectOptions } from '../remote/remote-action.js';
import { projectList } from './print-table.js';

/** `hoist deploy-hooks ls | add | rm`: secret URLs that build and deploy a project's live version again. */
export default function deployHooks(program: Command): void {
  const group = program
    .command('deploy-hooks')
    .description("manage a project's deploy hooks (secret URLs that build and deploy its live version when POSTed to)");

  projectList(group, 'list ids, names, who made each and when it was last used (URLs are never shown)', {
    list: (client, projectId) => client.deployHooks(projectId),
    headers: ['id', 'name', 'created', 'by', 'last used'],
    row: (h) => [h.id, h.name, h.created_at, h.created_by?.email ?? '-', h.last_triggered_at ?? 'never'],
    none: 'deploy hooks',
  });

  projectAction<ProjectOptions, [string]>(
    group
      .command('add')
      .description('add a deploy hook; its URL is printed this once (on stdout, the URL alone)')
      .argument('<name>', 'what it is for (a CMS, a schedule)'),
    async (client, project, o, name) => {
      const hook = await client.addDeployHook(project.id, name);
      if (o.json) return console.log(JSON.stringify(hook));
      console.error(
        `Added deploy hook ${hook.id} (${printable(hook.name)}) on ${printable(project.name)}. Its URL follows: keep ` +
          'it secret, it is not shown again; a POST to it builds and deploys the live version.',
      );
      console.log(hook.url);
    },
    (_o, name) => {
      if (!name.trim()) throw usage('a deploy hook needs a name (what it is for: a CMS, a schedule)');
    },
  );

  projectAction<ProjectOptions, [string]>(
    group
      .command('rm')
      .description('remove a deploy hook: its URL stops working at once')
      .argument('<hookID>', 'deploy hook id (see hoist deploy-hooks ls)'),
    async (client, project, o, id) => {
      await client.removeDeployHook(project.id, id);
      if (o.json) console.log(JSON.stringify({ removed: id, project: project.id }));
      else console.log(`Removed deploy hook ${id} from ${printable(project.name)}; its URL no longer works.`);
    },
    (_o, id) => checkId(id, 'deploy hook', 'hoist deploy-hooks ls'),
  );
}
