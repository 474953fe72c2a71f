import type { Command } from 'commander';
import type { HoistClient, Project } from '../../../client/hoist-client.js';
import { usage } from './cli-error.js';
import { explain } from './explain.js';
import { connect, type Connection } from './connect.js';
import { findProject, UUID } from './project-ref.js';
import { printable } from './terminal.js';

/** Options every command that talks to the REST API takes. */
export interface RemoteOptions {
  api?: string;
  json?: boolean;
}

/** Adds the options of a command that talks to the REST API: --api and --json. */
export const remoteOptions = (c: Command): Command =>
  c
    .option('--api <url>', 'Hoist API URL (default: HOIST_API_URL, else the one you logged in to)')
    .option('--json', 'print the result as JSON');

/** Adds the options of a command about one project: --project (default: the folder's), --api and --json. */
export const projectOptions = (c: Command): Command =>
  remoteOptions(c.option('--project <project>', 'project id, name or slug (default: the project of this folder)'));

/**
 * Runs a command that talks to the REST API: runs `check` (bad usage is found before anything else),
 * connects (with a token unless `needToken` is false), runs `fn`, and reports any error as a person can act on it (as
 * JSON with --json) with exit code
 * 1, or 2 for bad usage.
 */
export function remoteAction<O extends RemoteOptions, A extends unknown[]>(
  fn: (c: Connection, o: O, ...args: A) => Promise<void>,
  {
    needToken = true,
    check,
    anonymous = false,
  }: {
    needToken?: boolean;
    check?: (o: O, ...args: A) => void;
    /** The call authenticates otherwise (login): a 401 is its answer, not a saved token's. */
    anonymous?: boolean;
  } = {},
) {
  return async (...all: unknown[]): Promise<void> => {
    // Commander passes the arguments, then the options, then the command.
    const o = all[all.length - 2] as O;
    const args = all.slice(0, -2) as A;
    let tokenFrom: Connection['tokenFrom'] = 'none';
    try {
      check?.(o, ...args);
      const c = await connect(o.api, needToken);
      tokenFrom = c.tokenFrom;
      await fn(c, o, ...args);
    } catch (err) {
      const e = explain(err, anonymous ? 'none' : tokenFrom);
      if (o.json) console.log(JSON.stringify(e.json));
      // A server's message may quote a build's output: it cannot drive the terminal. Its lines stay lines.
      else console.error(`hoist: ${e.message.split('\n').map(printable).join('\n')}`);
      process.exitCode = e.exitCode;
    }
  };
}

/** The options of a command about one project (see projectOptions). */
export type ProjectOptions = RemoteOptions & { project?: string };

/**
 * Gives `c` the options of a command about one project and runs `fn` on the project --project names (the folder's by
 * default), as remoteAction does: `check` finds bad usage before any request.
 */
export function projectAction<O extends ProjectOptions, A extends unknown[]>(
  c: Command,
  fn: (client: HoistClient, project: Project, o: O, ...args: A) => Promise<void>,
  check?: (o: O, ...args: A) => void,
): void {
  projectOptions(c).action(
    remoteAction<O, A>(async ({ client }, o, ...args) => fn(client, await findProject(client, o.project), o, ...args), {
      check,
    }),
  );
}

/** Throws bad usage when `id` is not a UUID: `"x" is not a <what> id (a UUID: <ls> lists them)`. */
export function checkId(id: string, what: string, ls: string): void {
  if (!UUID.test(id)) throw usage(`${JSON.stringify(id)} is not a ${what} id (a UUID: ${ls} lists them)`);
}
