import type { EntityManager, EntityName } from '@mikro-orm/core';

/**
 * The `entity` whose columns hold the values of `where` (column names as the table has them, never input), managed by
 * `em` as `findOne` would give it (one `em` manages already is given as it is), or null: one plain query and the
 * ORM's mapping of its row, without findOne's query building, about a third of its CPU (bench/orm-reads.ts). For
 * the reads every upload, stage and deployment makes.
 */
export async function loadOne<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  where: Record<string, string>,
): Promise<T | null> {
  const meta = em.getMetadata().get<T>(entity);
  const columns = Object.keys(where).map((column) => `${column} = ?`);
  const [row] = await em
    .getConnection()
    .execute<Record<string, unknown>[]>(
      `select * from ${meta.tableName} where ${columns.join(' and ')} limit 1`,
      Object.values(where),
      'all',
      em.getTransactionContext(),
    );
  // em.map hands its options to em.merge, whose `refresh: false` gives an entity em manages as it is, as findOne
  // does (map's type declares only `schema`).
  return row ? em.map(entity, row, { refresh: false } as { schema?: string }) : null;
}

/** The `entity` whose primary key is `id` (see loadOne). */
export function loadById<T extends object>(em: EntityManager, entity: EntityName<T>, id: string): Promise<T | null> {
  const key = em.getMetadata().get<T>(entity).getPrimaryProps()[0]!.fieldNames[0]!;
  return loadOne(em, entity, { [key]: id });
}
