import type { EntityDictionary, EntityManager, EntityName } from '@mikro-orm/core';

/**
 * The rows a plain query answers, in `em`'s transaction when it is in one: for the reads every upload, stage and
 * deployment makes, where MikroORM's query building cost several times the query (bench/orm-reads.ts). Values are
 * bound as the database stores them (dates: `em.getPlatform().processDateProperty`).
 */
export function queryRows<T>(em: EntityManager, sql: string, params: unknown[]): Promise<T[]> {
  return em.getConnection().execute<T[]>(sql, params, 'all', em.getTransactionContext());
}

/**
 * The `entity` whose columns hold the values of `where` (column names as the table has them, never input), managed by
 * `em` as `findOne` would give it (one `em` manages already is given as it is), or null: one plain query and the
 * ORM's mapping of its row, about a third of findOne's CPU.
 */
export async function loadOne<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  where: Record<string, string>,
): Promise<T | null> {
  const meta = em.getMetadata().get<T>(entity);
  const columns = Object.keys(where).map((column) => `${column} = ?`);
  const [row] = await queryRows<EntityDictionary<T>>(
    em,
    `select * from ${meta.tableName} where ${columns.join(' and ')} limit 1`,
    Object.values(where),
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
