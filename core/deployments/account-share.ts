import type { EntityManager } from '@mikro-orm/core';
import { Account } from '../entities/account.js';
import { CHAIN_KINDS, Operation } from '../entities/operation.js';
import { queryRows, updateRows } from '../entities/plain-sql.js';
import { lockOwner, underOwnerLock } from '../billing/owner-lock.js';
import type { Queue } from '../ports/queue.js';
import { STAGE_TOPIC } from './operation-store.js';

/** The chains of an account that run (not held): what its share counts. */
const RUNNING_CHAINS =
  `select count(*) as n from operations where account_id = ? and kind in (${CHAIN_KINDS.map(() => '?')}) ` +
  "and status in ('queued', 'running') and held_since is null";

/**
 * The workers' fair share per account: an account runs at most `cap` deployment chains at once, where cap is the live
 * worker slots less `reserved` (at least 1), so that no account's deployments take every slot while another account's
 * wait (a build holds its slot up to the build timeout). A chain started beyond it is held: its operation is written
 * with `heldSince` and its first stage is not enqueued; when one of the account's chains ends, its held ones are let
 * go (`release`, rollbacks first, then the oldest) as far as it has room. Counting and marking take the account's
 * lock, so racing starts of one account never run more than its share.
 */
export class AccountShare {
  constructor(
    private readonly em: EntityManager,
    private readonly queue: Pick<Queue, 'workers'>,
    /** Slots of all live workers that no single account's chains may take (config reservedWorkerSlots). */
    private readonly reserved: number,
  ) {}

  /**
   * The chains one account runs at once: live worker slots less the reserved ones, at least 1. A queue that does not
   * answer (NATS away) counts none: a start is still accepted, held beyond one chain, and let go by the workers' sweep.
   */
  async cap(): Promise<number> {
    return shareOf(await this.queue.workers(STAGE_TOPIC).catch(() => 0), this.reserved);
  }

  /**
   * In the transaction `tx` that starts `op`'s chain, before anything else is locked there: marks `op` held
   * (`heldSince`, written when the row exists already, `written`) when its account runs `cap` chains, else clears the
   * mark. `planLimit` is the account plan's concurrent_builds: a plan that never lets it run more than the cap skips
   * the count and the lock. A promote (a rollback) is held too (its Deploy may hold a slot the health timeout long),
   * but goes first when the account's chains are let go.
   */
  async admit(tx: EntityManager, op: Operation, planLimit: number, written: boolean): Promise<void> {
    const held = planLimit > 1 && (await this.full(tx, op, planLimit));
    const heldSince = held ? new Date() : null;
    if (written && (op.heldSince !== null || held)) await updateRows(tx, Operation, { id: op.id }, { heldSince });
    op.heldSince = heldSince;
  }

  /**
   * Lets go of `accountId`'s held chains as far as its share has room now, promotes (rollbacks) first, then the oldest:
   * clears their mark (a compare-and-set on the revision, which it bumps, so a writer holding an older copy reads it
   * again) and returns them as written, for their first stage to be enqueued.
   */
  async release(accountId: string): Promise<Operation[]> {
    const any = await queryRows(
      this.em.fork(),
      'select id from operations where account_id = ? and held_since is not null and status = ? limit 1',
      [accountId, 'running'],
    );
    if (!any.length) return [];
    const cap = await this.cap();
    return underOwnerLock(this.em, Account, accountId, async (tx) => {
      const room = cap - (await count(tx, accountId));
      if (room <= 0) return [];
      // As many as the plan lets the account start (its concurrent_builds): a few.
      const held = await tx.find(
        Operation,
        { accountId, status: 'running', heldSince: { $ne: null } },
        { orderBy: { heldSince: 'asc', id: 'asc' } },
      );
      const rollbacksFirst = (op: Operation) => (op.kind === 'promote' ? 0 : 1);
      const freed: Operation[] = [];
      for (const op of held.sort((a, b) => rollbacksFirst(a) - rollbacksFirst(b)).slice(0, room)) {
        const set = { heldSince: null, revision: op.revision + 1 };
        if ((await updateRows(tx, Operation, { id: op.id, revision: op.revision }, set)) === 1)
          freed.push(Object.assign(new Operation(), op, set));
      }
      return freed;
    });
  }

  /** Whether `op`'s account runs its share of chains already (never when the plan allows no more), under its lock. */
  private async full(tx: EntityManager, op: Operation, planLimit: number): Promise<boolean> {
    const cap = await this.cap();
    if (planLimit <= cap) return false;
    await lockOwner(tx, Account, op.accountId);
    return (await count(tx, op.accountId, op.id)) >= cap;
  }
}

/** The chains one account runs at once when `workers` slots are live and `reserved` of them kept for others. */
export const shareOf = (workers: number, reserved: number) => Math.max(1, workers - reserved);

/** The account's running chains that are not held, but `except`. */
async function count(em: EntityManager, accountId: string, except?: string): Promise<number> {
  const [row] = await queryRows<{ n: number | string }>(em, except ? `${RUNNING_CHAINS} and id <> ?` : RUNNING_CHAINS, [
    accountId,
    ...CHAIN_KINDS,
    ...(except ? [except] : []),
  ]);
  return Number(row?.n ?? 0);
}
