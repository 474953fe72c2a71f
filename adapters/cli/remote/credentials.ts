import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** What `hoist login` keeps: the API it logged in to and the token (a secret). */
export interface Credentials {
  api_url: string;
  token: string;
  expires_at: string;
  email: string;
}

/** $XDG_CONFIG_HOME/hoist, or ~/.config/hoist. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'hoist');
}

/** The credentials file: readable by its owner only (mode 0600, in a 0700 folder). */
export const credentialsFile = (env: NodeJS.ProcessEnv = process.env) => join(configDir(env), 'credentials.json');

/** The saved credentials, or null when there are none (or the file is unreadable JSON). */
export async function readCredentials(): Promise<Credentials | null> {
  const text = await readFile(credentialsFile(), 'utf8').catch(() => null);
  if (text === null) return null;
  try {
    const c = JSON.parse(text) as Credentials;
    return typeof c.token === 'string' && typeof c.api_url === 'string' ? c : null;
  } catch {
    return null;
  }
}

/**
 * Writes the credentials into a new file, mode 0600 from its creation (`wx`: never an existing file, nor one a
 * symlink names), then renames it over the old one. The token is never in a file another user could read: not in
 * one left with a looser mode (an older client, a copy), where a chmod after writing would come too late for a
 * reader that opened it before.
 */
export async function saveCredentials(c: Credentials): Promise<string> {
  const dir = configDir();
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = credentialsFile();
  const temp = join(dir, `.credentials-${randomBytes(8).toString('hex')}.tmp`);
  try {
    await writeFile(temp, JSON.stringify(c, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
    await rename(temp, file);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  return file;
}

/** Removes the credentials file; true when there was one. */
export async function removeCredentials(): Promise<boolean> {
  const had = (await readCredentials()) !== null;
  await rm(credentialsFile(), { force: true });
  return had;
}
