import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** A message kept by the `mailer-outbox` plugin instead of being sent. */
export class OutboxMail {
  id: string = randomUUID();
  to!: string;
  subject!: string;
  text!: string;
  createdAt: Date = new Date();
}

export const OutboxMailSchema = new EntitySchema<OutboxMail>({
  class: OutboxMail,
  tableName: 'outbox_mail',
  properties: {
    id: { type: 'uuid', primary: true },
    to: { type: 'string', length: 320, index: true },
    subject: { type: 'string', length: 300 },
    text: { type: 'text' },
    createdAt: { type: 'Date', index: true },
  },
});
