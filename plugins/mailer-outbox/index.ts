import type { EntityManager } from '@mikro-orm/core';
import { OutboxMail, OutboxMailSchema } from './outbox-mail.js';
import { definePlugin, ENTITY_MANAGER, PLUGIN_API_VERSION } from '../../core/plugin.js';
import type { Mailer, MailMessage } from '../../core/ports/mailer.js';

/** Keeps every message in the database instead of sending it (`hoist mail list` shows them). */
export class OutboxMailer implements Mailer {
  constructor(private readonly em: EntityManager) {}

  async send(message: MailMessage): Promise<void> {
    // An insert, not a flush: MikroORM runs a flush in an AsyncLocalStorage context, which the edge (whose gate
    // mails access codes) keeps out of its process (SiteAccessService.on).
    await this.em.fork().insert(OutboxMail, Object.assign(new OutboxMail(), message));
  }
}

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'mailer-outbox',
  port: 'mailer',
  name: 'outbox',
  deps: { em: ENTITY_MANAGER },
  entities: [OutboxMailSchema],
  create: ({ em }) => new OutboxMailer(em),
});
