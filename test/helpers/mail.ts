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
