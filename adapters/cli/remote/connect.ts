import { HoistClient } from '../../../client/hoist-client.js';
import { CliError } from './cli-error.js';
import { readCredentials } from './credentials.js';

export const DEFAULT_API_URL = 'http://localhost:3000';

/** A client of the REST API and where its URL and token came from. */
export interface Connection {
  client: HoistClient;
  apiUrl: string;
  /** env: HOIST_TOKEN; file: the credentials of `hoist login`; none: not logged in. */
  tokenFrom: 'env' | 'file' | 'none';
}

const trim = (url: string) => url.replace(/\/+$/, '');

/**
 * The API URL (--api, else HOIST_API_URL, else the one logged in to, else localhost:3000) and the
 * token (HOIST_TOKEN, else the saved one, only for the URL it was issued by: a token is never sent
 * to another server). With `needToken`, throws "not logged in" or "login expired" errors that say
 * what to run.
 */
export async function connect(api: string | undefined, needToken = true): Promise<Connection> {
  const saved = await readCredentials();
  const apiUrl = trim(api ?? process.env.HOIST_API_URL ?? saved?.api_url ?? DEFAULT_API_URL);
  let token: string | undefined;
  let tokenFrom: Connection['tokenFrom'] = 'none';
  if (process.env.HOIST_TOKEN) {
    token = process.env.HOIST_TOKEN;
    tokenFrom = 'env';
  } else if (saved && trim(saved.api_url) === apiUrl) {
    if (needToken && Date.parse(saved.expires_at) <= Date.now()) {
      throw new CliError(
        `Your login to ${apiUrl} (${saved.email}) expired at ${saved.expires_at}: run \`hoist login\` again.`,
        1,
        'token_expired',
      );
    }
    token = saved.token;
    tokenFrom = 'file';
  }
  if (needToken && !token) {
    throw new CliError(
      `Not logged in to ${apiUrl}: run \`hoist login\`` +
        `${saved ? ` (you are logged in to ${saved.api_url})` : ''}, or set HOIST_TOKEN.`,
      1,
      'not_logged_in',
    );
  }
  return { client: new HoistClient({ baseUrl: apiUrl, token }), apiUrl, tokenFrom };
}
