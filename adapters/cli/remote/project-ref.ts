import { readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { HoistClient, Project } from '../../../client/hoist-client.js';
import { CliError } from './cli-error.js';

/** An id as the API makes them (a UUID). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The project name a folder deploys as: the `name` of its package.json (without an npm scope), else the folder's name.
 */
export function defaultProjectName(dir: string): string {
  try {
    const name = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name;
    if (typeof name === 'string' && name.trim()) return name.replace(/^@[^/]+\//, '').trim();
  } catch {
    // No readable package.json with a name: the folder's name it is.
  }
  return basename(resolve(dir));
}

/**
 * The project `ref` names: an id, or the name or slug of one of the account's projects; without
 * `ref`, the project the current folder deploys as. Throws a CliError naming what was looked for.
 */
export async function findProject(client: HoistClient, ref: string | undefined): Promise<Project> {
  const wanted = ref ?? defaultProjectName('.');
  const projects = await client.projects();
  const found = projects.find((p) =>
    UUID.test(wanted) ? p.id === wanted.toLowerCase() : p.name === wanted || p.slug === wanted,
  );
  if (found) return found;
  const named = ref ? `"${ref}"` : `"${wanted}" (the name of this folder; pick another with --project)`;
  throw new CliError(`No project ${named} in your account: \`hoist projects\` lists them.`, 1, 'not_found');
}
