import { nameAllowed } from './agent-auth-service.js';
import { OAuthError } from './oauth-error.js';

/** An OAuth client of the agent-tool interface, as its registration gave it. */
export interface OAuthClient {
  name: string;
  redirectUris: string[];
}

/** What dynamic registration (RFC 7591) answers. */
export interface RegisteredClient {
  client_id: string;
  client_name: string;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: 'none';
  client_id_issued_at: number;
}

const PREFIX = 'hoist-client.';
const MAX_URIS = 5;
const MAX_URI_LENGTH = 500;
/**
 * An app's own scheme for its redirect: reverse-domain (`com.example.app`, RFC 8252 7.1), or one of the coding agents'
 * own. No other: browsers and systems give other schemes meanings of their own (`view-source:`, `intent:`, `ms-*:`...).
 */
const APP_SCHEME = /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+$/;
const AGENT_SCHEMES = new Set(['cursor', 'vscode', 'vscode-insiders', 'windsurf', 'zed', 'claude']);
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Registers a public client (PKCE, no secret), as MCP clients do before they ask a user (RFC 7591). Nothing is stored:
 * the client id carries the checked registration, and is checked again whenever it is used; anyone may register any
 * name, so the consent page shows where it sends the user. Throws OAuthError invalid_redirect_uri or
 * invalid_client_metadata.
 */
export function registerClient(body: unknown, now: Date): RegisteredClient {
  const meta = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const client = checkClient(meta.client_name ?? 'An agent', meta.redirect_uris);
  for (const [field, allowed] of [
    ['grant_types', ['authorization_code', 'refresh_token']],
    ['response_types', ['code']],
  ] as const) {
    const asked = meta[field];
    if (
      asked !== undefined &&
      (!Array.isArray(asked) || asked.some((v) => !(allowed as readonly string[]).includes(v)))
    )
      throw new OAuthError('invalid_client_metadata', `${field} may hold only ${allowed.join(', ')}`);
  }
  const id = PREFIX + Buffer.from(JSON.stringify({ n: client.name, r: client.redirectUris })).toString('base64url');
  return {
    client_id: id,
    client_name: client.name,
    redirect_uris: client.redirectUris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    client_id_issued_at: Math.floor(now.getTime() / 1000),
  };
}

/** The client a client id names, checked as its registration was; null for anything else. */
export function clientOf(clientId: unknown): OAuthClient | null {
  if (typeof clientId !== 'string' || !clientId.startsWith(PREFIX) || clientId.length > 8192) return null;
  try {
    const { n, r } = JSON.parse(Buffer.from(clientId.slice(PREFIX.length), 'base64url').toString('utf8'));
    return checkClient(n, r);
  } catch {
    return null;
  }
}

/**
 * Whether `uri` is one of the client's redirect URIs: the same string, or, for an http loopback one, the same but for
 * the port (a native app listens on whatever port it gets, RFC 8252 7.3).
 */
export function redirectAllowed(client: OAuthClient, uri: unknown): uri is string {
  if (typeof uri !== 'string') return false;
  if (client.redirectUris.includes(uri)) return true;
  const loose = loopbackWithoutPort(uri);
  return loose !== null && client.redirectUris.some((r) => loopbackWithoutPort(r) === loose);
}

function loopbackWithoutPort(uri: string): string | null {
  const url = safeUrl(uri);
  if (!url || url.protocol !== 'http:' || !LOOPBACK.has(url.hostname)) return null;
  url.port = '';
  return url.href;
}

function checkClient(name: unknown, uris: unknown): OAuthClient {
  if (typeof name !== 'string' || !nameAllowed(name.trim()))
    throw new OAuthError(
      'invalid_client_metadata',
      'client_name must be 1 to 100 characters without control or format characters',
    );
  if (!Array.isArray(uris) || uris.length < 1 || uris.length > MAX_URIS)
    throw new OAuthError('invalid_redirect_uri', `redirect_uris must list 1 to ${MAX_URIS} URIs`);
  for (const uri of uris) {
    const why = refusal(uri);
    if (why) throw new OAuthError('invalid_redirect_uri', `${JSON.stringify(uri)}: ${why}`);
  }
  return { name: name.trim(), redirectUris: [...new Set(uris as string[])] };
}

/** Why a redirect URI is refused, or null: https anywhere, http on loopback only, an app's own scheme (APP_SCHEME). */
function refusal(uri: unknown): string | null {
  if (typeof uri !== 'string' || uri.length > MAX_URI_LENGTH) return `a URI of at most ${MAX_URI_LENGTH} characters`;
  const url = safeUrl(uri);
  if (!url) return 'not an absolute URI';
  if (url.hash || uri.includes('#')) return 'a redirect URI has no fragment';
  if (url.username || url.password) return 'a redirect URI has no user or password';
  const scheme = url.protocol.slice(0, -1);
  if (scheme === 'https') return null;
  if (scheme === 'http') return LOOPBACK.has(url.hostname) ? null : 'http only to localhost, 127.0.0.1 or [::1]';
  if (APP_SCHEME.test(scheme) || AGENT_SCHEMES.has(scheme)) return null;
  return `the scheme ${scheme} is refused: https, http on loopback, or an app's reverse-domain one (com.example.app)`;
}

function safeUrl(uri: string): URL | null {
  try {
    return new URL(uri);
  } catch {
    return null;
  }
}
