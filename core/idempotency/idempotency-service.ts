import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { createHash } from 'node:crypto';
import { IdempotencyRecord } from '../entities/idempotency-record.js';
import { conflict, HoistError, invalid } from '../errors.js';
import type { Clock } from '../ports/clock.js';

export const IDEMPOTENCY_SERVICE = Symbol.for('hoist.IdempotencyService');

/** How long a key is remembered. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** A write's answer. */
export interface Answer {
  status: number;
  body: unknown;
}

/** SHA-256 (hex) of a request's canonical JSON form, for comparing repeated keys. */
export function requestHash(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

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
    return (await this.em.fork().count(IdempotencyRecord, { id: `${accountId}:${key}`, createdAt: { $gte: since } })) > 0;
  }

  /**
   * Runs `work` under the key and remembers its answer; `replayed` is true when the answer is a
   * remembered one and `work` did not run. The key is claimed (a row insert) before `work` runs, so
   * of concurrent repeats one runs it and the others get its answer or 409 conflict.
   */
  async run(accountId: string, key: string | undefined, hash: string, work: () => Promise<Answer>): Promise<Answer & { replayed: boolean }> {
    if (key === undefined) return { ...(await work()), replayed: false };
    validateKey(key);
    const id = `${accountId}:${key}`;
    const em = this.em.fork();
    const now = this.clock.now();
    await em.nativeDelete(IdempotencyRecord, {
      id,
      $or: [{ createdAt: { $lt: new Date(now.getTime() - IDEMPOTENCY_TTL_MS) } }, { status: 0, createdAt: { $lt: new Date(now.getTime() - ABANDONED_CLAIM_MS) } }],
    });
    try {
      // A claim: status 0 until the answer is known (the body column is required).
      await em.insert(IdempotencyRecord, Object.assign(new IdempotencyRecord(), { id, requestHash: hash, status: 0, body: {}, createdAt: now }));
    } catch (err) {
      if (!(err instanceof UniqueConstraintViolationException)) throw err;
      return { ...answerOf(await em.findOne(IdempotencyRecord, { id }), hash), replayed: true };
    }
    try {
      const answer = await work();
      await em.nativeUpdate(IdempotencyRecord, { id }, { status: answer.status, body: answer.body });
      return { ...answer, replayed: false };
    } catch (err) {
      await em.nativeDelete(IdempotencyRecord, { id });
      throw err;
    }
  }
}

/** The remembered answer of `record` for a request hashed `hash`. */
function answerOf(record: IdempotencyRecord | null, hash: string): Answer {
  if (record && record.requestHash !== hash) {
    throw new HoistError('idempotency_key_reused', 'This Idempotency-Key was used with a different request in the last 24 hours; use a new key');
  }
  // No record: the write that claimed the key has just failed and let it go.
  if (!record || record.status === 0) throw conflict('A request with this Idempotency-Key is still in progress; retry in a moment');
  return { status: record.status, body: record.body };
}

/** Keys are 1–255 visible ASCII characters. */
export function validateKey(key: string): void {
  if (!/^[\x21-\x7e]{1,255}$/.test(key)) throw invalid('Idempotency-Key must be 1-255 visible ASCII characters', { field: 'Idempotency-Key' });
}
