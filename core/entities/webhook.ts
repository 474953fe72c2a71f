import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { StartedBy } from './operation.js';

/** A URL a project's owner asked Hoist to post its deployment events to, with the secret that signs them. */
export class Webhook {
  id: string = randomUUID();
  accountId!: string;
  projectId!: string;
  url!: string;
  /** The events it receives, comma-separated and between commas (`,deployment.succeeded,deployment.failed,`). */
  events!: string;
  /** The signing secret, sealed with the project's data key (Cipher); shown once, when the webhook is made. */
  secretSealed!: string;
  /** Who made it (null: made before it was recorded). The webhook stays the account's when that member leaves. */
  createdBy: StartedBy | null = null;
  createdAt!: Date;
}

export const WebhookSchema = new EntitySchema<Webhook>({
  class: Webhook,
  tableName: 'webhooks',
  properties: {
    id: { type: 'uuid', primary: true },
    accountId: { type: 'uuid' },
    projectId: { type: 'uuid', index: true },
    url: { type: 'string', length: 2048 },
    events: { type: 'string', length: 255 },
    secretSealed: { type: 'text' },
    createdBy: { type: 'json', nullable: true },
    createdAt: { type: 'Date' },
  },
});

/** One event to deliver to one webhook, and how its delivery went: the outbox of webhooks. */
export class WebhookDelivery {
  id: string = randomUUID();
  webhookId!: string;
  projectId!: string;
  /** The operation the event is about; null for a ping. */
  operationId: string | null = null;
  /** `deployment.succeeded`, `deployment.failed`, `deployment.canceled` or `ping`. */
  event!: string;
  /** The body posted, made at the first try (the same bytes every try), null until then. */
  payload: string | null = null;
  /** `pending` (tries left), `delivered` (a 2xx answer) or `failed` (no tries left). */
  status: string = 'pending';
  attempts: number = 0;
  /** When the next try is due (pending only). */
  nextAttemptAt: Date | null = null;
  /** The status of the last answer, null when there was none. */
  responseStatus: number | null = null;
  /** Why the last try failed (no answer, or a status other than 2xx), null once delivered. */
  lastError: string | null = null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const WebhookDeliverySchema = new EntitySchema<WebhookDelivery>({
  class: WebhookDelivery,
  tableName: 'webhook_deliveries',
  indexes: [{ properties: ['webhookId', 'createdAt'] }, { properties: ['status', 'nextAttemptAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    webhookId: { type: 'uuid' },
    projectId: { type: 'uuid', index: true },
    operationId: { type: 'uuid', nullable: true },
    event: { type: 'string', length: 64 },
    payload: { type: 'text', nullable: true },
    status: { type: 'string', length: 16 },
    attempts: { type: 'integer' },
    nextAttemptAt: { type: 'Date', nullable: true },
    responseStatus: { type: 'integer', nullable: true },
    lastError: { type: 'string', length: 500, nullable: true },
    createdAt: { type: 'Date' },
    updatedAt: { type: 'Date' },
  },
});
