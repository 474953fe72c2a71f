import { LockMode, type EntityManager, type EntityName } from '@mikro-orm/core';

/**
 * Runs `write` in a transaction that first locks the row owning the counted rows (a project for its
 * variables and grants, an account for its projects and domains). Every writer of that owner takes
 * the lock, so a plan limit counted inside `write` still holds at commit however many requests race.
 * PostgreSQL locks the row (SELECT ... FOR UPDATE); SQLite runs one write transaction at a time.
 */
export function underOwnerLock<T>(
  em: EntityManager,
  owner: EntityName<object>,
  id: string,
  write: (tx: EntityManager) => Promise<T>,
): Promise<T> {
  return em.fork().transactional(async (tx) => {
    await lockOwner(tx, owner, id);
    return write(tx);
  });
}

/** Locks the row `id` of `owner` in the transaction `tx` until it ends (see underOwnerLock). */
export async function lockOwner(tx: EntityManager, owner: EntityName<object>, id: string): Promise<void> {
  await tx.findOne(owner, { id } as never, { lockMode: LockMode.PESSIMISTIC_WRITE });
}
