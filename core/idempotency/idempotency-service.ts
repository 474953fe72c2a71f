import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { createHash } from 'node:crypto';
import { IdempotencyRecord } from '../entities/idempotency-record.js';
import { conflict, HoistError, invalid } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import { token } from '../tokens.js';

export const IDEMPOTENCY_SERVICE = token<IdempotencyService>('hoist.IdempotencyService');

/** How long a key is remembered. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** SHA-256 (hex) of a request's canonical JSON form, for comparing repeated keys. */
function requestHash(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

/** A key claimed for one request (null when the request came without a key): remember its answer or release it. */
export type Claim = { id: string } | null;

// The status of a claimed key whose answer is not known yet, and of a remembered answer.
const CLAIMED = 0;
const ANSWERED = 1;

/** A claim this old whose answer never came belongs to a process that died: the key is free again. */
export const ABANDONED_CLAIM_MS = 5 * 60 * 1000;

/**
 * Idempotency-Key semantics for writes, per account: within 24 h the same key with the same request
 * gets the first answer again and does no new work; with a different request it gets 422
 * idempotency_key_reused; while the first is still running it gets 409 conflict. Only successful
 * answers are remembered: a failed write can be sent again with the same key.
 */
export class IdempotencyService {
  constructor(
    private readonly em: EntityManager,
    private readonly clock: Clock,
  ) {}

  /** Whether the account used `key` within the last 24 h (its answer is remembered, or its request still runs). */
  async remembers(accountId: string, key: string): Promise<boolean> {
    const since = new Date(this.clock.now().getTime() - IDEMPOTENCY_TTL_MS);
    return (
      (await this.em.fork().count(IdempotencyRecord, { id: `${accountId}:${key}`, createdAt: { $gte: since } })) > 0
    );
  }

  /**
   * Runs `work` once per key and request: `replayed` is true when `value` is the remembered answer
   * of an earlier request and `work` did not run (see claim).
   */
  async run<T>(
    accountId: string,
    key: string | undefined,
    request: unknown,
    work: () => Promise<T>,
  ): Promise<{ value: T; replayed: boolean }> {
    const claimed = await this.claim<T>(accountId, key, request);
    if ('replay' in claimed) return { value: claimed.replay, replayed: true };
    try {
      const value = await work();
      await this.remember(claimed.claim, value);
      return { value, replayed: false };
    } catch (err) {
      await this.release(claimed.claim);
      throw err;
    }
  }

  /**
   * Claims `key` (a row insert) for `request` (any JSON, compared by hash), so that of concurrent
   * repeats one does the work; or gives the remembered answer (`replay`) of an earlier same request.
   * Throws idempotency_key_reused for a different request, conflict while the first one is still
   * being answered. Without a key there is nothing to claim (`claim` is null).
   */
  async claim<T>(
    accountId: string,
    key: string | undefined,
    request: unknown,
  ): Promise<{ replay: T } | { claim: Claim }> {
    if (key === undefined) return { claim: null };
    validateKey(key);
    const id = `${accountId}:${key}`;
    const hash = requestHash(request);
    const em = this.em.fork();
    const now = this.clock.now();
    await em.nativeDelete(IdempotencyRecord, {
      id,
      $or: [
        { createdAt: { $lt: new Date(now.getTime() - IDEMPOTENCY_TTL_MS) } },
        { status: CLAIMED, createdAt: { $lt: new Date(now.getTime() - ABANDONED_CLAIM_MS) } },
      ],
    });
    try {
      // The body column is required: empty until the answer is known.
      await em.insert(
        IdempotencyRecord,
        Object.assign(new IdempotencyRecord(), { id, requestHash: hash, status: CLAIMED, body: {}, createdAt: now }),
      );
      return { claim: { id } };
    } catch (err) {
      if (!(err instanceof UniqueConstraintViolationException)) throw err;
      return { replay: answerOf(await em.findOne(IdempotencyRecord, { id }), hash) as T };
    }
  }

  /** Remembers `answer` (JSON) as the answer of the claimed request. */
  async remember(claim: Claim, answer: unknown): Promise<void> {
    if (claim)
      await this.em.fork().nativeUpdate(IdempotencyRecord, { id: claim.id }, { status: ANSWERED, body: answer });
  }

  /**
   * Deletes the keys older than 24 h of every account (a key's own reuse deletes it too, but most keys are never sent
   * again); resolves how many went.
   */
  async purge(): Promise<number> {
    const before = new Date(this.clock.now().getTime() - IDEMPOTENCY_TTL_MS);
    return this.em.fork().nativeDelete(IdempotencyRecord, { createdAt: { $lt: before } });
  }

  /** Lets the key go after a failed write: the same key can be sent again. */
  async release(claim: Claim): Promise<void> {
    if (claim) await this.em.fork().nativeDelete(IdempotencyRecord, { id: claim.id });
  }
}

/** The remembered answer of `record` for a request hashed `hash`. */
function answerOf(record: IdempotencyRecord | null, hash: string): unknown {
  if (record && record.requestHash !== hash) {
    throw new HoistError(
      'idempotency_key_reused',
      'This Idempotency-Key was used with a different request in the last 24 hours; use a new key',
    );
  }
  // No record: the write that claimed the key has just failed and let it go.
  if (!record || record.status === CLAIMED)
    throw conflict('A request with this Idempotency-Key is still in progress; retry in a moment');
  return record.body;
}

/** Keys are 1–255 visible ASCII characters. */
export function validateKey(key: string): void {
  if (!/^[\x21-\x7e]{1,255}$/.test(key))
    throw invalid('Idempotency-Key must be 1-255 visible ASCII characters', { field: 'Idempotency-Key' });
}
