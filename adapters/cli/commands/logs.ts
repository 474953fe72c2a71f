import type { Command } from 'commander';
import { HoistApiError } from '../../../client/errors.js';
import type { Answer, HoistClient, Project } from '../../../client/hoist-client.js';
import { CliError, usage } from '../remote/cli-error.js';
import type { Connection } from '../remote/connect.js';
import { findProject } from '../remote/project-ref.js';
import { remoteAction, type RemoteOptions } from '../remote/remote-action.js';

/** The most lines one call reads (the API's maximum). */
const LINES_MAX = 1000;

type RuntimeLog = Answer<'/api/v1/projects/{projectID}/deployments/{deploymentID}/logs', 'get', 200>;

interface LogsOptions extends RemoteOptions {
  project?: string;
  lines: string;
}

/**
 * `hoist logs [deploymentID]`: the runtime output (stdout and stderr) of a deployment's Node.js app, by default of
 * the project's live release, oldest first, each line with when it was printed.
 */
export default function logs(program: Command): void {
  program
    .command('logs')
    .argument('[deploymentID]', 'the deployment (a release id, see hoist releases; default: the live release)')
    .description(
      "print the last lines a deployment's Node.js app printed (stdout and stderr), oldest first, each with when " +
        'it was printed (a static site runs no app: nothing is kept for it)',
    )
    .option('--project <project>', 'project id, name or slug (default: the project of this folder)')
    .option('-n, --lines <n>', `how many of the last lines, 1 to ${LINES_MAX}`, '100')
    .option('--api <url>', 'Hoist API URL (default: HOIST_API_URL, else the one you logged in to)')
    .option('--json', 'print the answer as JSON: {"deployment_id", "kept", "lines": [{"at", "text"}]}')
    .action(
      remoteAction<LogsOptions, [string | undefined]>(run, {
        check: (o) => {
          if (!/^\d+$/.test(o.lines) || Number(o.lines) < 1 || Number(o.lines) > LINES_MAX)
            throw usage(`--lines takes a whole number from 1 to ${LINES_MAX} (got "${o.lines}")`);
        },
      }),
    );
}

async function run({ client }: Connection, o: LogsOptions, deploymentId: string | undefined): Promise<void> {
  const project = await findProject(client, o.project);
  const id = deploymentId ?? (await liveRelease(client, project));
  const result = await client.api.GET('/api/v1/projects/{projectID}/deployments/{deploymentID}/logs', {
    params: { path: { projectID: project.id, deploymentID: id }, query: { lines: Number(o.lines) } },
  });
  if (!result.response.ok) throw new HoistApiError(result.response.status, result.error);
  const log = result.data as RuntimeLog;
  if (o.json) return console.log(JSON.stringify(log));
  if (!log.kept)
    return console.error(
      `No runtime log is kept for deployment ${log.deployment_id}: a static site runs no app, so it prints ` +
        'nothing; a Node.js release keeps its output from when it starts until it is removed.',
    );
  if (!log.lines.length) return console.error(`The app of deployment ${log.deployment_id} has printed nothing yet.`);
  console.log(log.lines.map((l) => `${l.at} ${l.text}`).join('\n'));
}

/** The id of the project's live release (as `hoist releases` marks it); a CliError when none is live. */
async function liveRelease(client: HoistClient, project: Project): Promise<string> {
  const live = (await client.releases(project.id)).find((r) => r.live);
  if (live) return live.id;
  throw new CliError(
    `${project.name} has no live release: give a deployment id (\`hoist releases --project ${project.name}\` ` +
      'lists its releases), or deploy it first.',
    1,
    'no_live_release',
  );
}
