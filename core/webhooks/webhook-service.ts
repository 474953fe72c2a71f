import type { EntityManager } from '@mikro-orm/core';
import type { EntitlementService } from '../billing/entitlement-service.js';
import { underOwnerLock } from '../billing/owner-lock.js';
import { insertRow } from '../entities/plain-sql.js';
import type { StartedBy } from '../entities/operation.js';
import { Project } from '../entities/project.js';
import { Webhook, WebhookDelivery } from '../entities/webhook.js';
import type { EnvironmentService } from '../environment/environment-service.js';
import { HoistError, notFound } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import { isUuid } from '../projects/keyset-cursor.js';
import type { ProjectService } from '../projects/project-service.js';
import { token } from '../tokens.js';
import { secretAad, type WebhookDeliveries } from './webhook-deliveries.js';
import { checkEvents, checkUrl, eventsOf, newSecret, storedEvents } from './webhook-rules.js';

export const WEBHOOK_SERVICE = token<WebhookService>('hoist.WebhookService');

/** A delivery as the API shows it: never its body. */
export interface DeliveryView {
  id: string;
  webhook_id: string;
  event: string;
  operation_id: string | null;
  status: string;
  attempts: number;
  response_status: number | null;
  error: string | null;
  next_attempt_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A webhook as the API shows it: never its secret (shown once, when it is made), and its last delivery. */
export interface WebhookView {
  id: string;
  url: string;
  events: string[];
  /** Who made it; null for a webhook made before it was recorded. */
  created_by: StartedBy | null;
  created_at: string;
  last_delivery: DeliveryView | null;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export const deliveryView = (d: WebhookDelivery): DeliveryView => ({
  id: d.id,
  webhook_id: d.webhookId,
  event: d.event,
  operation_id: d.operationId,
  status: d.status,
  attempts: d.attempts,
  response_status: d.responseStatus,
  error: d.lastError,
  next_attempt_at: d.status === 'pending' ? iso(d.nextAttemptAt) : null,
  created_at: d.createdAt.toISOString(),
  updated_at: d.updatedAt.toISOString(),
});

/** How many deliveries a list shows at most. */
export const DELIVERIES_MAX = 100;
/** Pings one webhook takes in any hour: a ping is a test, not a way to post at will to someone else's server. */
export const PINGS_PER_HOUR = 10;

/**
 * A project's webhooks: make one (its secret shown once), list, remove, ping, and list its deliveries. Every call
 * checks that the project is the account's (another's answers not_found).
 */
export class WebhookService {
  constructor(
    private readonly em: EntityManager,
    private readonly projects: ProjectService,
    private readonly entitlements: EntitlementService,
    private readonly environment: Pick<EnvironmentService, 'sealSecret'>,
    private readonly deliveries: Pick<WebhookDeliveries, 'dispatch'>,
    private readonly clock: Clock,
    private readonly privateAddresses: boolean,
  ) {}

  /**
   * Makes a webhook of the project for `url` and `events` (all when left out), recording `createdBy` (the user who
   * makes it), under the plan's webhooks_per_project. Throws invalid_request, plan_restricted or not_found. The answer
   * carries the signing secret, never shown again.
   */
  async create(
    accountId: string,
    projectId: string,
    input: { url?: unknown; events?: unknown },
    createdBy: StartedBy,
  ): Promise<WebhookView & { secret: string }> {
    const url = checkUrl(input.url, this.privateAddresses);
    const events = checkEvents(input.events);
    const project = await this.projects.get(accountId, projectId);
    const webhook = Object.assign(new Webhook(), {
      accountId,
      projectId: project.id,
      url,
      events: storedEvents(events),
      createdBy: { user_id: createdBy.user_id, email: createdBy.email },
      createdAt: this.clock.now(),
    });
    const secret = newSecret();
    webhook.secretSealed = await this.environment.sealSecret(project.id, secretAad(webhook), secret);
    await underOwnerLock(this.em, Project, project.id, async (tx) => {
      await this.entitlements.assertWithin(
        accountId,
        'webhooks_per_project',
        await tx.count(Webhook, { projectId: project.id }),
      );
      await insertRow(tx, Webhook, webhook);
    });
    return { ...this.view(webhook, null), secret };
  }

  /** The project's webhooks, oldest first, each with its last delivery. */
  async list(accountId: string, projectId: string): Promise<WebhookView[]> {
    const project = await this.projects.get(accountId, projectId);
    const em = this.em.fork();
    const hooks = await em.find(Webhook, { projectId: project.id }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    const views: WebhookView[] = [];
    for (const w of hooks) {
      const last = await em.findOne(
        WebhookDelivery,
        { webhookId: w.id },
        { orderBy: { createdAt: 'desc', id: 'desc' } },
      );
      views.push(this.view(w, last));
    }
    return views;
  }

  /** Removes a webhook and its deliveries (a try under way ends unrecorded); not_found when there is none. */
  async remove(accountId: string, projectId: string, webhookId: string): Promise<void> {
    const webhook = await this.find(accountId, projectId, webhookId);
    await this.em.fork().transactional(async (tx) => {
      await tx.nativeDelete(WebhookDelivery, { webhookId: webhook.id });
      await tx.nativeDelete(Webhook, { id: webhook.id });
    });
  }

  /**
   * Queues a `ping` delivery to the webhook (whatever its events) and answers it, pending; rate_limited (with
   * retry_after) past PINGS_PER_HOUR in the last hour.
   */
  async ping(accountId: string, projectId: string, webhookId: string): Promise<DeliveryView> {
    const webhook = await this.find(accountId, projectId, webhookId);
    // Counted and recorded under the webhook's lock: pings sent at once each counted the others' as not there yet.
    const delivery = await underOwnerLock(this.em, Webhook, webhook.id, async (tx) => {
      const now = this.clock.now();
      const hour = new Date(now.getTime() - 3_600_000);
      const recent = await tx.find(
        WebhookDelivery,
        { webhookId: webhook.id, event: 'ping', createdAt: { $gt: hour } },
        { orderBy: { createdAt: 'asc' }, fields: ['createdAt'], limit: PINGS_PER_HOUR },
      );
      if (recent.length >= PINGS_PER_HOUR) {
        const retryAfter = Math.max(1, Math.ceil((recent[0].createdAt.getTime() - hour.getTime()) / 1000));
        throw new HoistError('rate_limited', `A webhook takes ${PINGS_PER_HOUR} pings an hour; try again later`, {
          retry_after: retryAfter,
        });
      }
      const row = Object.assign(new WebhookDelivery(), {
        webhookId: webhook.id,
        projectId: webhook.projectId,
        event: 'ping',
        nextAttemptAt: now,
        createdAt: now,
        updatedAt: now,
      });
      await insertRow(tx, WebhookDelivery, row);
      return row;
    });
    await this.deliveries.dispatch([delivery.id]);
    return deliveryView(delivery);
  }

  /** The webhook's deliveries, newest first, at most `limit` (up to DELIVERIES_MAX). */
  async deliveriesOf(accountId: string, projectId: string, webhookId: string, limit: number): Promise<DeliveryView[]> {
    const webhook = await this.find(accountId, projectId, webhookId);
    const rows = await this.em
      .fork()
      .find(
        WebhookDelivery,
        { webhookId: webhook.id },
        { orderBy: { createdAt: 'desc', id: 'desc' }, limit: Math.min(limit, DELIVERIES_MAX) },
      );
    return rows.map(deliveryView);
  }

  private async find(accountId: string, projectId: string, webhookId: string): Promise<Webhook> {
    const project = await this.projects.get(accountId, projectId);
    const webhook = isUuid(webhookId)
      ? await this.em.fork().findOne(Webhook, { id: webhookId, projectId: project.id })
      : null;
    if (!webhook) throw notFound('Webhook');
    return webhook;
  }

  private view(w: Webhook, last: WebhookDelivery | null): WebhookView {
    return {
      id: w.id,
      url: w.url,
      events: eventsOf(w.events),
      created_by: w.createdBy,
      created_at: w.createdAt.toISOString(),
      last_delivery: last ? deliveryView(last) : null,
    };
  }
}

/** Deletes a project's webhooks and their deliveries (with its data key, the only key that opens their secrets). */
export async function deleteWebhooksOf(em: EntityManager, projectId: string): Promise<void> {
  await em.nativeDelete(WebhookDelivery, { projectId });
  await em.nativeDelete(Webhook, { projectId });
}
