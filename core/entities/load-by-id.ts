import type { EntityManager, EntityName } from '@mikro-orm/core';

/**
 * The `entity` whose primary key is `id`, managed by `em` as `findOne` would give it, or null: one plain query
 * and the ORM's mapping of its row, without findOne's query building, about a third of its CPU
 * (bench/orm-reads.ts). For the reads every stage of every deployment makes.
 */
export async function loadById<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  id: string,
): Promise<T | null> {
  const meta = em.getMetadata().get<T>(entity);
  const key = meta.getPrimaryProps()[0]!.fieldNames[0];
  const [row] = await em
    .getConnection()
    .execute<Record<string, unknown>[]>(
      `select * from ${meta.tableName} where ${key} = ? limit 1`,
      [id],
      'all',
      em.getTransactionContext(),
    );
  return row ? em.map(entity, row) : null;
}
