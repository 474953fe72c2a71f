import type { EntityManager } from '@mikro-orm/core';
import { OutboxMail } from '../../core/entities/outbox-mail.js';
import type { Mailer, MailMessage } from '../../core/ports/mailer.js';
import { MAILER } from '../../core/ports/mailer.js';
import type { PluginDefinition } from '../../core/plugin.js';
import { ENTITY_MANAGER } from '../../core/tokens.js';

/** Keeps every message in the database instead of sending it (`hoist mail list` shows them). */
export class OutboxMailer implements Mailer {
  constructor(private readonly em: EntityManager) {}

  async send(message: MailMessage): Promise<void> {
    const em = this.em.fork();
    em.persist(Object.assign(new OutboxMail(), message));
    await em.flush();
  }
}

export default {
  id: 'mailer-outbox',
  port: 'mailer',
  name: 'outbox',
  token: MAILER,
  create: ({ get }) => new OutboxMailer(get(ENTITY_MANAGER)),
} satisfies PluginDefinition<Mailer>;
