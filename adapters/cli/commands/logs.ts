import type { Command } from 'commander';
import { HoistApiError } from '../../../client/errors.js';
import type { Answer, HoistClient, Project } from '../../../client/hoist-client.js';
import { CliError, usage } from '../remote/cli-error.js';
import type { Connection } from '../remote/connect.js';
import { findProject } from '../remote/project-ref.js';
import { remoteAction, type RemoteOptions } from '../remote/remote-action.js';
import { interactive, printable } from '../remote/terminal.js';

/** The most lines one call reads (the API's maximum). */
const LINES_MAX = 1000;

type RuntimeLog = Answer<'/api/v1/projects/{projectID}/deployments/{deploymentID}/logs', 'get', 200>;

interface LogsOptions extends RemoteOptions {
  project?: string;
  lines: string;
  follow?: boolean;
}

/** How often --follow asks for new lines. */
const FOLLOW_EVERY_MS = 1000;

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
    .option('-f, --follow', 'keep printing new lines as the app prints them, until interrupted (Ctrl-C)')
    .option('--api <url>', 'Hoist API URL (default: HOIST_API_URL, else the one you logged in to)')
    .option('--json', 'print the answer as JSON: {"deployment_id", "kept", "lines": [{"at", "text"}]}')
    .action(
      remoteAction<LogsOptions, [string | undefined]>(run, {
        check: (o) => {
          if (!/^\d+$/.test(o.lines) || Number(o.lines) < 1 || Number(o.lines) > LINES_MAX)
            throw usage(`--lines takes a whole number from 1 to ${LINES_MAX} (got "${o.lines}")`);
          if (o.follow && o.json) throw usage('Give --follow or --json, not both');
        },
      }),
    );
}

async function run({ client }: Connection, o: LogsOptions, deploymentId: string | undefined): Promise<void> {
  const project = await findProject(client, o.project);
  const id = deploymentId ?? (await liveRelease(client, project));
  const read = async (lines: number) => {
    const result = await client.api.GET('/api/v1/projects/{projectID}/deployments/{deploymentID}/logs', {
      params: { path: { projectID: project.id, deploymentID: id }, query: { lines } },
    });
    if (!result.response.ok) throw new HoistApiError(result.response.status, result.error);
    return result.data as RuntimeLog;
  };
  const log = await read(Number(o.lines));
  if (o.json) return console.log(JSON.stringify(log));
  if (o.follow && log.kept) return follow(log, read);
  if (!log.kept)
    return console.error(
      `No runtime log is kept for deployment ${printable(log.deployment_id)}: a static site runs no app, so it ` +
        'prints nothing; a Node.js release keeps its output from when it starts until it is removed.',
    );
  if (!log.lines.length)
    return console.error(`The app of deployment ${printable(log.deployment_id)} has printed nothing yet.`);
  print(log.lines);
}

const lineOf = (l: RuntimeLog['lines'][number]) => `${l.at} ${l.text}`;
// On a terminal, what the app printed cannot drive it; into a file or a pipe it goes as it is.
const print = (lines: RuntimeLog['lines']) =>
  lines.length && console.log(lines.map((l) => (interactive() ? printable(lineOf(l)) : lineOf(l))).join('\n'));

/**
 * Prints the lines of `first`, then, every FOLLOW_EVERY_MS, those `read` gives after the last one printed (found
 * again by its time and text among the last 1,000), until the process is interrupted or the log is removed. When
 * it is not among them, more was printed in between than one read holds: that is said, and the lines read are
 * printed.
 */
async function follow(first: RuntimeLog, read: (lines: number) => Promise<RuntimeLog>): Promise<void> {
  print(first.lines);
  let last = first.lines.at(-1);
  for (;;) {
    await new Promise((r) => setTimeout(r, FOLLOW_EVERY_MS));
    const { lines, kept } = await read(LINES_MAX);
    if (!kept)
      return console.error(
        `The log of deployment ${printable(first.deployment_id)} is no longer kept: its release was removed.`,
      );
    let from = 0;
    if (last) {
      const key = lineOf(last);
      const at = lines.map(lineOf).lastIndexOf(key);
      if (at >= 0) from = at + 1;
      else if (lines.length && Date.parse(lines[0].at) > Date.parse(last.at))
        console.error(`(more than ${LINES_MAX} lines since the last one shown: some are left out)`);
      else from = lines.length;
    }
    print(lines.slice(from));
    last = lines.at(-1) ?? last;
  }
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
