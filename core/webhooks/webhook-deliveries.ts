import type { EntityManager } from '@mikro-orm/core';
import type { OperationViews } from '../deployments/operation-views.js';
import { insertRow, loadById, queryRows, updateRows } from '../entities/plain-sql.js';
import { Project } from '../entities/project.js';
import { Webhook, WebhookDelivery } from '../entities/webhook.js';
import type { EnvironmentService } from '../environment/environment-service.js';
import type { Clock } from '../ports/clock.js';
import type { Queue } from '../ports/queue.js';
import { WebhookSendError, type WebhookSender } from '../ports/webhook-sender.js';
import { token } from '../tokens.js';
import { eventOfStatus, eventsOf, signedHeaders } from './webhook-rules.js';

/** The queue topic of webhook deliveries. */
export const WEBHOOK_TOPIC = 'webhooks';

/** The payload of a delivery job: which delivery, and which try it is for (its key, so each try is queued once). */
export interface WebhookJob {
  deliveryId: string;
  attempt: number;
}

/** Waits before each try after the first: 10 s, 1 min, 5 min, 30 min, 2 h; six tries in all. */
export const RETRY_DELAYS_MS = [10_000, 60_000, 300_000, 1_800_000, 7_200_000];
/**
 * Tries of one account a process makes at once: an account whose endpoints are slow (or whose names resolve slowly)
 * holds this many of the worker's slots, never the others' turn. Its other tries wait for the sweep.
 */
export const TRIES_PER_ACCOUNT = 2;
/** Tries a sweep queues at most. */
export const SWEEP_MAX = 500;
/**
 * Tries of one account a sweep queues at most (its oldest due first): an account with a backlog of due tries (endpoints
 * that never answer) never fills a sweep, so every other account's due tries are queued by the same sweep.
 */
export const SWEEP_PER_ACCOUNT = 100;
/** How long a try holds its delivery: after it, a try that never reported (its worker stopped) is made again. */
const TRY_HOLD_MS = 120_000;
/** Deliveries ended this long ago are removed by the sweep. */
export const DELIVERY_DAYS = 30;
/** How often a process removes the deliveries past DELIVERY_DAYS. */
const PURGE_EVERY_MS = 3_600_000;

/** The associated data a webhook's secret is sealed to: it opens for that webhook of that project only. */
export const secretAad = (w: Pick<Webhook, 'projectId' | 'id'>) => `hoist-webhook:v1:${w.projectId}:${w.id}`;

/**
 * The outbox of webhooks, and their delivery. The transaction that ends a deployment records one delivery per webhook
 * of the project that asked for that event (`record`), so an event is never lost between that commit and the queue;
 * `dispatch` then queues their first try. A worker takes each (`deliver`): it claims the try, posts the signed body
 * through the WebhookSender, and records the answer and when the next try is due (RETRY_DELAYS_MS), until one answers
 * 2xx or none is left. The workers' `sweep` queues the tries that are due (the next tries, and any that was not queued:
 * a queue away, a worker stopped mid-try; not every queue delays a job) and removes deliveries older than
 * DELIVERY_DAYS.
 */
export class WebhookDeliveries {
  /** When this process last removed old deliveries (a scan of the table: once an hour, not every sweep). */
  private purgedAt = 0;
  /** Tries this process is making now, by account. */
  private readonly trying = new Map<string, number>();

  constructor(
    private readonly em: EntityManager,
    private readonly queue: Queue,
    private readonly clock: Clock,
    private readonly sender: WebhookSender,
    private readonly environment: Pick<EnvironmentService, 'openSecret'>,
    private readonly views: Pick<OperationViews, 'get'>,
  ) {}

  /**
   * In the transaction `tx` that ends operation `operationId` of project `projectId` with `status` (or starts it:
   * `started`): records a delivery for every webhook of the project that receives that event. Returns their ids, for
   * `dispatch` after the commit.
   */
  async record(tx: EntityManager, projectId: string, operationId: string, status: string): Promise<string[]> {
    const event = eventOfStatus(status);
    if (!event) return [];
    const hooks = await queryRows<{ id: string }>(
      tx,
      'select id from webhooks where project_id = ? and events like ?',
      [projectId, `%,${event},%`],
    );
    const now = this.clock.now();
    const ids: string[] = [];
    for (const { id } of hooks) {
      const d = Object.assign(new WebhookDelivery(), {
        webhookId: id,
        projectId,
        operationId,
        event,
        nextAttemptAt: now,
        createdAt: now,
        updatedAt: now,
      });
      await insertRow(tx, WebhookDelivery, d);
      ids.push(d.id);
    }
    return ids;
  }

  /** Queues the first try of each delivery; one the queue does not take now is queued by the sweep. */
  async dispatch(ids: string[]): Promise<void> {
    for (const deliveryId of ids) await this.enqueue({ deliveryId, attempt: 1 }).catch(() => undefined);
  }

  /**
   * Makes try `attempt` of a delivery, when it is still that try's turn (a try already made, or a delivery ended or
   * removed, is skipped): posts, then records the answer and when the next try is due, or ends the delivery. One whose
   * account has TRIES_PER_ACCOUNT tries under way in this process is left for the sweep to queue again.
   */
  async deliver({ deliveryId, attempt }: WebhookJob): Promise<void> {
    const em = this.em.fork();
    const delivery = await loadById(em, WebhookDelivery, deliveryId);
    const webhook = delivery && (await loadById(em, Webhook, delivery.webhookId));
    // Its account has its share of tries under way here: the sweep queues it again while it is due.
    if (!delivery || !webhook || (this.trying.get(webhook.accountId) ?? 0) >= TRIES_PER_ACCOUNT) return;
    const account = webhook.accountId;
    this.trying.set(account, (this.trying.get(account) ?? 0) + 1);
    try {
      await this.attempt(em, delivery, webhook, attempt);
    } finally {
      const left = this.trying.get(account)! - 1;
      if (left) this.trying.set(account, left);
      else this.trying.delete(account);
    }
  }

  /**
   * Try `attempt` of `delivery` (as read before its claim: the claim changes only its attempts and hold), when it is
   * still its turn: see deliver.
   */
  private async attempt(em: EntityManager, delivery: WebhookDelivery, webhook: Webhook, attempt: number) {
    const deliveryId = delivery.id;
    const now = this.clock.now();
    const claimed = await em.nativeUpdate(
      WebhookDelivery,
      { id: deliveryId, status: 'pending', attempts: attempt - 1, nextAttemptAt: { $lte: now } },
      { attempts: attempt, nextAttemptAt: new Date(now.getTime() + TRY_HOLD_MS), updatedAt: now },
    );
    if (claimed !== 1) return;
    const payload = delivery.payload ?? (await this.payloadOf(delivery, webhook));
    const outcome = await this.post(delivery, webhook, payload);
    const last = attempt > RETRY_DELAYS_MS.length;
    const at = this.clock.now();
    const next = outcome.ok || last ? null : new Date(at.getTime() + RETRY_DELAYS_MS[attempt - 1]);
    await updateRows(
      em,
      WebhookDelivery,
      { id: deliveryId, attempts: attempt },
      {
        payload,
        status: outcome.ok ? 'delivered' : last ? 'failed' : 'pending',
        nextAttemptAt: next,
        responseStatus: outcome.status,
        lastError: outcome.error,
        updatedAt: at,
      },
    );
  }

  /**
   * Queues the tries that are due, in turns: every account's oldest due try, then every account's second, and so on, up
   * to SWEEP_PER_ACCOUNT of one account and SWEEP_MAX in all. (Taken oldest due first whatever their account, one
   * account's backlog of SWEEP_MAX due tries kept every other account's retries out for as long as it lasted.) Once an
   * hour, it also removes deliveries that ended more than DELIVERY_DAYS ago. Returns how many tries it queued.
   */
  async sweep(): Promise<number> {
    const em = this.em.fork();
    const now = this.clock.now();
    const due = await queryRows<{ id: string; attempts: number }>(
      em,
      'select id, attempts from (' +
        'select d.id, d.attempts, d.next_attempt_at, ' +
        'row_number() over (partition by w.account_id order by d.next_attempt_at, d.id) as turn ' +
        'from webhook_deliveries d join webhooks w on w.id = d.webhook_id ' +
        "where d.status = 'pending' and d.next_attempt_at <= ?" +
        ') due where turn <= ? order by turn, next_attempt_at limit ?',
      [now, SWEEP_PER_ACCOUNT, SWEEP_MAX],
    );
    for (const d of due) await this.enqueue({ deliveryId: d.id, attempt: d.attempts + 1 });
    if (now.getTime() - this.purgedAt >= PURGE_EVERY_MS) {
      const old = new Date(now.getTime() - DELIVERY_DAYS * 86_400_000);
      await em.nativeDelete(WebhookDelivery, { status: { $ne: 'pending' }, updatedAt: { $lt: old } });
      this.purgedAt = now.getTime();
    }
    return due.length;
  }

  private enqueue(job: WebhookJob): Promise<void> {
    return this.queue.enqueue(WEBHOOK_TOPIC, job, { key: `${job.deliveryId}:${job.attempt}` });
  }

  /** Posts the body signed for this try; ok on a 2xx answer, else why not (never the body or a header). */
  private async post(
    delivery: WebhookDelivery,
    webhook: Webhook,
    body: string,
  ): Promise<{ ok: boolean; status: number | null; error: string | null }> {
    const secret = await this.environment
      .openSecret(webhook.projectId, secretAad(webhook), webhook.secretSealed)
      .catch(() => null);
    if (secret === null) return { ok: false, status: null, error: 'the signing secret does not open (keys lost)' };
    try {
      const headers = signedHeaders(delivery.id, delivery.event, body, secret, this.clock.now());
      const { status } = await this.sender.post({ url: webhook.url, headers, body });
      const ok = status >= 200 && status < 300;
      return { ok, status, error: ok ? null : `answered ${status}` };
    } catch (err) {
      const reason = err instanceof WebhookSendError ? `${err.reason}: ${err.message}` : 'other: the post failed';
      return { ok: false, status: null, error: reason.slice(0, 500) };
    }
  }

  /**
   * The body of a delivery, made at its first try: the event, its time, the project, and the operation as
   * GET /api/v1/operations/{id} shows it then (a ping: the webhook).
   */
  private async payloadOf(delivery: WebhookDelivery, webhook: Webhook): Promise<string> {
    const project = await loadById(this.em.fork(), Project, delivery.projectId);
    const data: Record<string, unknown> = { project: { id: delivery.projectId, name: project?.name ?? null } };
    if (delivery.operationId)
      data.operation = await this.views.get(webhook.accountId, delivery.operationId).catch(() => null);
    else data.webhook = { id: webhook.id, url: webhook.url, events: eventsOf(webhook.events) };
    return JSON.stringify({ type: delivery.event, timestamp: delivery.createdAt.toISOString(), data });
  }
}

export const WEBHOOK_DELIVERIES = token<WebhookDeliveries>('hoist.WebhookDeliveries');
