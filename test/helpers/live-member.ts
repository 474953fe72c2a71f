import { OutboxMail } from '../../plugins/mailer-outbox/outbox-mail.js';
import type { LiveHoist } from './live.js';
import { tokenIn } from './mail.js';

let n = 0;

/** POSTs `body` as JSON to the API without a token; the status and the JSON answer (null when empty). */
async function post(h: LiveHoist, path: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${h.api}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** A member of a live Hoist's account: its user id (the member id), e-mail and bearer token. */
export interface LiveMember {
  id: string;
  email: string;
  token: string;
}

/**
 * Has `owner` (a bearer token) invite a new address into its account, chooses its password with the mailed token and
 * logs it in, as the member would; throws when an answer is not the expected one.
 */
export async function liveMember(h: LiveHoist, owner: string): Promise<LiveMember> {
  const email = `live-member${++n}-${process.pid}@example.com`;
  const invited = await h.call(owner, 'POST', '/api/v1/account/members', { email });
  if (invited.status !== 201) throw new Error(`invitation answered ${invited.status}: ${JSON.stringify(invited.body)}`);
  const [mail] = await h.running.kernel.orm.em
    .fork()
    .find(OutboxMail, { to: email }, { orderBy: { createdAt: 'asc' } });
  if (!mail) throw new Error(`no invitation mailed to ${email}`);
  const password = 'the member password';
  const reset = await post(h, '/api/v1/auth/password-recovery/reset', { token: tokenIn(mail), password });
  if (reset.status !== 204) throw new Error(`reset answered ${reset.status}: ${JSON.stringify(reset.body)}`);
  const login = await post(h, '/api/v1/auth/login', { email, password });
  if (login.status !== 200) throw new Error(`login answered ${login.status}: ${JSON.stringify(login.body)}`);
  return { id: invited.body.id, email, token: login.body.token };
}
