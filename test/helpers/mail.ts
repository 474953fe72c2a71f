import { OutboxMail } from '../../plugins/mailer-outbox/outbox-mail.js';
import type { TestApi } from './api.js';

/** Mail the outbox holds for `to`, oldest first. */
export function mailTo(t: TestApi, to: string): Promise<OutboxMail[]> {
  return t.inContext(() => t.kernel.orm.em.find(OutboxMail, { to }, { orderBy: { createdAt: 'asc' } }));
}

/** The one-time token a Hoist mail carries on its `Token: ...` line. */
export function tokenIn(mail: OutboxMail): string {
  const m = /^Token: (\S+)$/m.exec(mail.text);
  if (!m) throw new Error(`no token in mail: ${mail.text}`);
  return m[1];
}

/** Asks for a reset mail for `email` and sets `password` with its token, as the user would; asserts each answer. */
export async function resetPassword(t: TestApi, email: string, password: string): Promise<void> {
  const asked = await t.app.inject({ method: 'POST', url: '/api/v1/auth/password-recovery', payload: { email } });
  if (asked.statusCode !== 202) throw new Error(`recovery answered ${asked.statusCode}: ${asked.body}`);
  const mail = await mailTo(t, email);
  const reset = await t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/password-recovery/reset',
    payload: { token: tokenIn(mail[mail.length - 1]), password },
  });
  if (reset.statusCode !== 204) throw new Error(`reset answered ${reset.statusCode}: ${reset.body}`);
}
