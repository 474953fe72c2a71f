import type { EntityDictionary, EntityManager, EntityName, EntityProperty } from '@mikro-orm/core';
import type { AbstractSqlConnection } from '@mikro-orm/knex';

/**
 * Plain SQL for the statements every upload, stage and deployment makes, where MikroORM's query building cost several
 * times the statement (bench/orm-reads.ts). Values are bound, never written into the SQL (MikroORM writes them in),
 * so a statement's text is the same whatever its values and SQLite runs it prepared once (kept-statements.ts).
 */

/** What the connection answers a statement (transformRawResult is MikroORM's own reading of knex's answer). */
interface Results {
  transformRawResult<T>(res: unknown, method: 'all' | 'run'): T;
}

/** Runs `sql` with `params` bound, in `em`'s transaction when it is in one; `method`: rows, or what a write changed. */
async function run<T>(em: EntityManager, sql: string, params: unknown[], method: 'all' | 'run'): Promise<T> {
  const connection = em.getConnection() as AbstractSqlConnection;
  const query = connection.getKnex().raw(sql, params as never[]);
  const tx = em.getTransactionContext();
  if (tx) query.transacting(tx);
  try {
    return (connection as unknown as Results).transformRawResult<T>(await query, method);
  } catch (err) {
    throw em.getDriver().convertException(err as Error);
  }
}

/**
 * The rows a plain query answers (values bound as the database stores them: dates through
 * `em.getPlatform().processDateProperty`), in `em`'s transaction when it is in one.
 */
export function queryRows<T>(em: EntityManager, sql: string, params: unknown[]): Promise<T[]> {
  return run<T[]>(em, sql, params, 'all');
}

/** Runs the write `sql` with `params` bound (see queryRows); resolves to the number of rows it changed. */
export async function writeRows(em: EntityManager, sql: string, params: unknown[]): Promise<number> {
  return (await run<{ affectedRows: number }>(em, sql, params, 'run')).affectedRows;
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

/** Properties of an entity and their values (null in a where: IS NULL; undefined there: an error). */
type Values<T> = { [K in keyof T]?: T[K] | null };

/** Columns and bound values of `entity`'s properties, each value stored through its property's type (JSON, dates). */
function columnsOf<T extends object>(em: EntityManager, entity: EntityName<T>) {
  const meta = em.getMetadata().get<T>(entity);
  const platform = em.getPlatform();
  const params: unknown[] = [];
  const props = meta.properties as Record<string, EntityProperty<T> | undefined>;
  const name = (key: string) => {
    const prop = props[key];
    if (!prop?.fieldNames?.length) throw new Error(`${meta.className} has no column property ${key}`);
    return prop.fieldNames[0]!;
  };
  /** The column of property `key`, its value bound. */
  const bind = (key: string, value: unknown) => {
    const column = name(key);
    const { customType } = props[key]!;
    let stored = value;
    if (stored != null && customType)
      stored = customType.convertToDatabaseValue(stored, platform, { fromQuery: true, key, mode: 'query-data' });
    params.push(stored instanceof Date ? platform.processDateProperty(stored) : (stored ?? null));
    return column;
  };
  const listed = (values: Values<T>, what: string) => {
    const entries = Object.entries(values);
    if (!entries.length) throw new Error(`a plain statement on ${meta.className} needs a ${what}`);
    return entries;
  };
  return {
    table: meta.tableName,
    params,
    /** `column = ?` for each property set. */
    assign: (values: Values<T>) => listed(values, 'set').map(([key, value]) => `${bind(key, value)} = ?`),
    /** The conditions that the properties equal `values` (null: IS NULL; undefined is refused, never `= NULL`). */
    match: (values: Values<T>) =>
      listed(values, 'where')
        .map(([key, value]) => {
          if (value === undefined) throw new Error(`a plain statement on ${meta.className} has ${key} undefined`);
          return value === null ? `${name(key)} is null` : `${bind(key, value)} = ?`;
        })
        .join(' and '),
    /** The columns of the properties `row` has (undefined ones left to their defaults), their values bound. */
    row: (row: T) =>
      meta.props
        .filter((prop) => prop.fieldNames?.length && (row as Record<string, unknown>)[prop.name] !== undefined)
        .map((prop) => bind(prop.name, (row as Record<string, unknown>)[prop.name])),
  };
}

/**
 * Sets the properties `set` on the rows of `entity` whose properties equal `where`, as nativeUpdate would, in one
 * statement, in `em`'s transaction when it is in one; resolves to the number of rows changed. About a third of
 * nativeUpdate's CPU (bench/orm-reads.ts). Entities in `em`'s identity map are not changed.
 */
export async function updateRows<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  where: Values<T>,
  set: Values<T>,
): Promise<number> {
  const { table, params, assign, match } = columnsOf(em, entity);
  const sql = `update ${table} set ${assign(set).join(', ')} where ${match(where)}`;
  return (await run<{ affectedRows: number }>(em, sql, params, 'run')).affectedRows;
}

/** Deletes the rows of `entity` whose properties equal `where`, as nativeDelete would (see updateRows). */
export async function deleteRows<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  where: Values<T>,
): Promise<number> {
  const { table, params, match } = columnsOf(em, entity);
  return (await run<{ affectedRows: number }>(em, `delete from ${table} where ${match(where)}`, params, 'run'))
    .affectedRows;
}

/**
 * Inserts `row`, an `entity` (its properties as set; undefined ones get their columns' defaults), as em.insert would,
 * in one statement (see updateRows). A unique key it would break rejects with MikroORM's
 * UniqueConstraintViolationException, as em.insert does.
 */
export async function insertRow<T extends object>(em: EntityManager, entity: EntityName<T>, row: T): Promise<void> {
  const { table, params, row: columns } = columnsOf(em, entity);
  const names = columns(row);
  const sql = `insert into ${table} (${names.join(', ')}) values (${names.map(() => '?').join(', ')})`;
  await run(em, sql, params, 'run');
}
