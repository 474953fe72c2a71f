/** Where the gate's own pages live on every private project host; a deployed app cannot answer there. */
export const GATE_PREFIX = '/.hoist/access/';

/** Text made safe for HTML text and quoted attributes. */
export const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** A hidden form field. */
export const hidden = (name: string, value: string) => `<input type="hidden" name="${name}" value="${escape(value)}">`;

/** What every sign-in page shows. */
export interface GatePageInput {
  /** The project's name. */
  project: string;
  /** Path to return to after signing in (same host). */
  next: string;
  /** A message about the last attempt, shown as an alert. */
  error?: string;
}

/** A whole page of Hoist's own (the access gate's, the agent consent page): `body` inside its `main`. */
export function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex"><title>${escape(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:30rem;margin:4rem auto;padding:0 1rem;line-height:1.5}
label{display:block;font-weight:600;margin-top:1rem}
input{font:inherit;padding:.5rem;width:100%;box-sizing:border-box;border:1px solid #555;border-radius:4px}
button{font:inherit;margin-top:.75rem;padding:.5rem 1rem;border-radius:4px;border:1px solid #124;background:#124;
color:#fff;cursor:pointer}
button:focus,input:focus{outline:3px solid #f90;outline-offset:1px}.error{color:#a00;font-weight:600}
section{margin-top:2rem}</style></head>
<body><main>
${body}
</main></body></html>
`;
}

/** An alert with the last attempt's error, or nothing. */
export const alert = (error?: string) =>
  error ? `<p class="error" role="alert" id="gate-error">${escape(error)}</p>` : '';
const described = (error?: string) => (error ? ' aria-describedby="gate-error" aria-invalid="true"' : '');

/** The sign-in page: an e-mail form, and a password form when the project has an access password. */
export function signInPage(
  input: GatePageInput & { hasPassword: boolean; email?: string; errorAt?: 'email' | 'password' },
): string {
  const at = input.errorAt ?? 'email';
  return layout(
    `Sign in to ${input.project}`,
    `<h1>Sign in to ${escape(input.project)}</h1>
<p>This site is private. Sign in with an e-mail address that has access: we send it a one-time code.</p>
${at === 'email' ? alert(input.error) : ''}
<form method="post" action="${GATE_PREFIX}email">
${hidden('next', input.next)}
<label for="gate-email">E-mail address</label>
<input id="gate-email" name="email" type="email" autocomplete="email" required maxlength="320"
 value="${escape(input.email ?? '')}"${at === 'email' ? described(input.error) : ''}>
<button type="submit">Send me a code</button>
</form>
${
  input.hasPassword
    ? `<section aria-labelledby="gate-password-heading"><h2 id="gate-password-heading">Or use the site's password</h2>
${at === 'password' ? alert(input.error) : ''}
<form method="post" action="${GATE_PREFIX}password">
${hidden('next', input.next)}
<label for="gate-password">Access password</label>
<input id="gate-password" name="password" type="password" autocomplete="current-password"
 required${at === 'password' ? described(input.error) : ''}>
<button type="submit">Open the site</button>
</form></section>`
    : ''
}`,
  );
}

/** The code page: the same for every address, granted or not, so it tells nobody which are. */
export function codePage(input: GatePageInput & { email: string; code?: string }): string {
  return layout(
    `Enter your code for ${input.project}`,
    `<h1>Enter your code</h1>
<p>If <strong>${escape(input.email)}</strong> has access to ${escape(input.project)},
we sent it a one-time code and a sign-in link.
The code works for 10 minutes and 5 tries.</p>
${alert(input.error)}
<form method="post" action="${GATE_PREFIX}code">
${hidden('next', input.next)}${hidden('email', input.email)}
<label for="gate-code">Code</label>
<input id="gate-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*"
 required maxlength="12" value="${escape(input.code ?? '')}"${described(input.error)}>
<button type="submit">Sign in</button>
</form>
<p><a href="${GATE_PREFIX}?next=${encodeURIComponent(input.next)}">Use another e-mail address</a></p>`,
  );
}

/** A page for a refused or malformed gate request (too many tries, a cross-site form post, a bad form). */
export function gateMessagePage(title: string, message: string, next = '/'): string {
  return layout(
    title,
    `<h1>${escape(title)}</h1>
<p role="alert">${escape(message)}</p>
<p><a href="${GATE_PREFIX}?next=${encodeURIComponent(next)}">Back to sign-in</a></p>`,
  );
}
