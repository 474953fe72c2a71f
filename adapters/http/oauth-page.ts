import type { AuthorizationRequest } from '../../core/auth/oauth-service.js';
import { alert, escape, hidden, layout } from '../edge/access-pages.js';

/** Headers of every consent page: never framed (clickjacking), cached or sent on as a referrer. */
export const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
} as const;

/** Where the code goes, as the user should judge it: the origin (or, for an app's own scheme, the scheme). */
export function destination(uri: string): string {
  const url = new URL(uri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : `${url.protocol}//${url.host}`;
}

/**
 * The consent page: what asks (the client's self-chosen name, and where the answer goes, which no one can fake),
 * what it gets, and the user's e-mail and password to allow it; the request rides along in hidden fields, checked
 * again when the form comes back.
 */
export function consentPage(req: AuthorizationRequest, form: Record<string, string>, error?: string): string {
  const fields = ['response_type', 'client_id', 'redirect_uri', 'state', 'code_challenge', 'code_challenge_method']
    .filter((k) => form[k] !== undefined)
    .map((k) => hidden(k, form[k]))
    .join('');
  return layout(
    'Allow an agent to deploy to Hoist',
    `<h1>Allow <bdi>${escape(req.client.name)}</bdi> to deploy as you?</h1>
<p>An agent calling itself <strong><bdi>${escape(req.client.name)}</bdi></strong> asks to use Hoist's agent tools as
you: deploy files to your account's projects, read their operations and list them. Allowing sends it to
<strong>${escape(destination(req.redirectUri))}</strong>. Only allow it if you started this from that agent.</p>
<p>You can revoke it any time: <code>hoist tokens ls</code>, then <code>hoist tokens revoke &lt;id&gt;</code>.</p>
${alert(error)}
<form method="post" action="/oauth/authorize">
${fields}
<label for="oauth-email">E-mail address</label>
<input id="oauth-email" name="email" type="email" autocomplete="username" required maxlength="320">
<label for="oauth-password">Password</label>
<input id="oauth-password" name="password" type="password" autocomplete="current-password" required maxlength="1024">
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny" formnovalidate>Deny</button>
</form>`,
  );
}

/**
 * The page for a bad authorization request: nothing was allowed. `back` (when the request named a valid client and
 * redirect URI) is a link that takes the error back to the client, for the user to follow or not.
 */
export function refusedPage(message: string, back?: { href: string; origin: string }): string {
  return layout(
    'This authorization request is not valid',
    `<h1>This authorization request is not valid</h1>
${alert(message)}
<p>Nothing was allowed. Start again from the agent; if it keeps failing, its OAuth set-up is wrong.</p>
${back ? `<p><a href="${escape(back.href)}">Return to ${escape(back.origin)}</a></p>` : ''}`,
  );
}
